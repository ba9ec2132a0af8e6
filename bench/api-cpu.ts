/**
 * Where a request's CPU goes on the API's read routes (issue 25's bench:api
 * target): CPU microseconds per request of `app.handle` (the full stack: ops
 * observer, auth, rate limits, routing, envelope; no sockets) next to a bare
 * handler building the same Response, requests handed in directly, 32 in
 * flight, read from /proc (bench/thread-cpu.ts). Meaningful on a loaded
 * machine where wall-clock benches are not; the routes run in turn,
 * `--rounds` times, the median printed.
 *
 * Usage: bun bench/api-cpu.ts [-- --requests 20000 --rounds 3 --only <route name part>]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { videoInput } from "../machines/test-contexts.ts";
import { loadConfig } from "../src/config.ts";
import { newId, randomToken } from "../src/ids.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";
import { cpuNow, cpuPer } from "./thread-cpu.ts";

const argv = process.argv;
const num = (name: string, d: number) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? Number(argv[i + 1]) : d;
};
const requests = num("requests", 20_000);
const rounds = num("rounds", 3);
const only = argv.includes("--only") ? argv[argv.indexOf("--only") + 1]! : "";

const dataDir = mkdtempSync(join(tmpdir(), "bench-api-cpu-"));
const service = await createService(
  loadConfig({
    DATA_DIR: dataDir,
    PORT: "0",
    RTMP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    LIVE_SLOTS: "100000000",
    LIVE_SLOTS_PER_ORG: "100000000",
    WEBHOOK_ENDPOINTS_PER_ORG: "100000000",
  }),
  { logger: silentLogger, transcriber: null },
);
const { org, apiKey } = await service.orgs.createOrg("bench");
const big = 1_000_000_000;
await service.orgs.updateSettings(org.id, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: big, livestreamsCreatePerMinute: big } }));
const base = "http://127.0.0.1:3000/api/public/v1";
const auth = { authorization: `Bearer ${apiKey}` };
let video = "";
for (let i = 0; i < 100; i++) {
  video = newId("vid");
  await service.runtime.create("video", videoInput({ id: video, orgId: org.id, title: `Bench ${i}`, sourceUrl: `https://example.com/${randomToken(8)}.mp4`, createdAt: new Date().toISOString() }));
}
const post = (path: string, body: unknown) =>
  service.app.handle(new Request(base + path, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) })).then((r) => r.json() as Promise<any>);
let stream = "";
for (let i = 0; i < 100; i++) stream = (await post("/livestreams/", { title: `Bench ${i}` })).data.stream.id;
for (let i = 0; i < 20; i++) await post("/webhooks/", { url: `https://127.0.0.1:9/hook${i}`, events: ["VIDEO_TRANSCODING_COMPLETED"] });

const ROUTES: Record<string, string> = {
  organization: "/organization/",
  "a video": `/videos/${video}/`,
  "video list": "/videos/?limit=100",
  "a stream": `/livestreams/${stream}/`,
  "stream list": "/livestreams/?limit=100",
  "webhooks list": "/webhooks/",
  "404": "/videos/vid_missing/",
};

const results = new Map<string, Array<{ full: number; bare: number }>>();
async function cpuOf(run: () => unknown): Promise<number> {
  Bun.gc(true);
  const before = cpuNow();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next++ < requests) await run();
    }),
  );
  return cpuPer(before, cpuNow(), requests, 1).processMs * 1000;
}
for (let r = 0; r < rounds; r++) {
  for (const [name, path] of Object.entries(ROUTES)) {
    if (!name.includes(only)) continue;
    const sample = await service.app.handle(new Request(base + path, { headers: auth }));
    const body = await sample.text();
    const headers = Object.fromEntries([...sample.headers].filter(([k]) => k !== "content-length"));
    const bare = await cpuOf(async () => {
      const req = new Request(base + path, { headers: auth });
      req.headers.get("authorization");
      return new Response(body, { status: sample.status, headers });
    });
    const full = await cpuOf(async () => (await service.app.handle(new Request(base + path, { headers: auth }))).text());
    results.set(name, [...(results.get(name) ?? []), { full, bare }]);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`CPU µs per request (all threads), app.handle vs a bare handler, median of ${rounds} rounds of ${requests.toLocaleString("en")}:`);
for (const [name, xs] of results) {
  const full = med(xs.map((x) => x.full));
  const bare = med(xs.map((x) => x.bare));
  console.log(`  ${name.padEnd(16)} full ${full.toFixed(1).padStart(6)}   bare ${bare.toFixed(1).padStart(6)}   full - bare ${(full - bare).toFixed(1).padStart(6)}`);
}
await service.stop();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
