/**
 * bench:storage — what STORAGE=s3 costs against STORAGE=local, on a real
 * S3-compatible server (s3rver, same machine):
 *  1. serving one HLS segment through the service (serveObject): sequential
 *     latency (median, p95) and throughput with 8 clients, whole and ranged;
 *  2. storing a transcoded ladder (putDir of a real 720p ladder + download),
 *     and fetching a source back to scratch (download).
 *
 *   bun bench/storage.ts [--seconds 20] [--requests 300]
 *
 * s3rver is a test server (Node, files on the same disk): the S3 figures are
 * an upper bound of the service's own overhead plus s3rver's, not of a real
 * bucket, whose network latency would add to each request.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTranscoder, hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { STANDARD_RUNGS } from "../src/orgs/org-settings.ts";
import { createLocalObjectStore } from "../src/storage/local-object-store.ts";
import { serveObject } from "../src/storage/media-routes.ts";
import type { ObjectStore } from "../src/storage/object-store.ts";
import { createS3ObjectStore } from "../src/storage/s3-object-store.ts";
import { startS3rver } from "../test/support/s3rver.ts";
import { makeTestSource } from "./test-source.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const seconds = arg("seconds", 20);
const requests = arg("requests", 300);
if (!(await hasNativeFfmpeg())) {
  console.error("bench:storage needs ffmpeg on PATH (apt-get install ffmpeg).");
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), "bench-storage-"));
const input = join(work, "input.mp4");
makeTestSource(input, seconds);

// A real ladder: 360p + 720p HLS and the 720p mkv download.
const ladderDir = join(work, "ladder");
mkdirSync(ladderDir);
const transcoder = createTranscoder({ backend: "native" });
await transcoder.transcode({ input, outDir: ladderDir, ladder: ["360p", "720p", "1080p"].map((n) => STANDARD_RUNGS[n]!), downloads: [{ rung: "720p", format: "mkv" }] });
await transcoder.close();
const ladderFiles = (readdirSync(ladderDir, { recursive: true }) as string[]).filter((f) => statSync(join(ladderDir, f)).isFile());
const ladderBytes = ladderFiles.reduce((n, f) => n + statSync(join(ladderDir, f)).size, 0);
const segment = ladderFiles.filter((f) => f.endsWith(".ts") || f.endsWith(".m4s")).sort((a, b) => statSync(join(ladderDir, b)).size - statSync(join(ladderDir, a)).size)[0]!;

const s3 = await startS3rver("bench");
const stores: Record<string, ObjectStore> = {
  local: createLocalObjectStore(join(work, "data")),
  s3: createS3ObjectStore({ endpoint: s3.endpoint, bucket: s3.bucket, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" }),
};

const ms = (t0: number) => performance.now() - t0;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const mb = (n: number) => (n / 1024 / 1024).toFixed(1);

console.log(`ladder: ${ladderFiles.length} files, ${mb(ladderBytes)} MiB (${seconds} s of 720p); segment ${segment} ${(statSync(join(ladderDir, segment)).size / 1024).toFixed(0)} KiB`);
for (const [name, store] of Object.entries(stores)) {
  // Upload cost: a copy of the ladder dir each time (putDir moves nothing here).
  const runs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await store.putDir(`media/run${i}`, ladderDir);
    runs.push(ms(t0));
  }
  const t0 = performance.now();
  const scratch = join(work, `dl-${name}.mkv`);
  await store.download(`media/run0/${ladderFiles.find((f) => f.endsWith(".mkv"))}`, scratch);
  const dl = ms(t0);
  console.log(
    `${name.padEnd(5)} putDir ladder: median ${pct(runs, 50).toFixed(0)} ms (${(ladderBytes / 1024 / 1024 / (pct(runs, 50) / 1000)).toFixed(0)} MiB/s); download of the mkv to scratch ${dl.toFixed(0)} ms`,
  );
}

for (const [name, store] of Object.entries(stores)) {
  const key = `media/run0/${segment}`;
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => serveObject(req, store, key) });
  const url = `http://127.0.0.1:${server.port}/`;
  for (const [label, headers] of [
    ["whole", {}],
    ["range", { range: "bytes=1000-65535" }],
  ] as const) {
    const lat: number[] = [];
    for (let i = 0; i < requests; i++) {
      const t0 = performance.now();
      await (await fetch(url, { headers })).arrayBuffer();
      lat.push(ms(t0));
    }
    let done = 0;
    let bytes = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (done < requests) {
          done++;
          const n = (await (await fetch(url, { headers })).arrayBuffer()).byteLength;
          bytes += n; // after the await: `bytes += await …` would read bytes before it and lose the other clients' adds
        }
      }),
    );
    const wall = ms(t0) / 1000;
    console.log(`${name.padEnd(5)} GET ${label}: median ${pct(lat, 50).toFixed(2)} ms, p95 ${pct(lat, 95).toFixed(2)} ms; 8 clients ${(requests / wall).toFixed(0)} req/s, ${mb(bytes / wall)} MiB/s`);
  }
  server.stop(true);
}

await s3.stop();
rmSync(work, { recursive: true, force: true });
