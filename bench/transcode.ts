/**
 * The same 30 s 720p input and ladder through (a) the service's wasm backend
 * (pool of one worker per core, the default), (b) its native backend, (c) bare
 * `ffmpeg` run with the very argument lists the native backend ran (recorded,
 * then replayed). A job's runs are not all sequential: its encode runs are
 * started together (native: one process for the whole ladder since issue 15;
 * wasm: one run per rendition, spread over idle workers), then the download
 * run. The recording keeps that shape (runs
 * that were in flight together form one group) and (c) replays each group
 * concurrently, groups one after the other, so the baseline gets the same
 * parallelism as (b). Prints realtime factors and the ratios a/c and b/c,
 * then time-to-first-playable (POST /videos/ → COMPLETED) through the whole
 * service on each backend with its default settings. Needs Debian's ffmpeg
 * on PATH.
 * DRM (issue 11): beside each backend's plain job, the same job with `drm`
 * (each rung encoded into an MP4, then Shaka Packager's CENC DASH): wall time
 * and CPU (this process and its children: the wasm workers are threads of
 * it, ffmpeg and the packager its children) of both, their ratio, and the
 * packaging step's share of the DRM job's wall time (target: under 10 %).
 * Usage: npm run bench:transcode [-- --seconds 30]
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { randomKeyHex } from "../media/transcoder/download-key.ts";
import { createNativeRunner } from "../media/transcoder/native-runner.ts";
import { runTranscodeJob } from "../media/transcoder/run-transcode-job.ts";
import { createWasmTranscoder } from "../media/transcoder/create-wasm-transcoder.ts";
import { createTranscoder, hasNativeFfmpeg, type Transcoder, type TranscodeJob } from "../media/transcoder/index.ts";
import { STANDARD_RUNGS } from "../src/orgs/org-settings.ts";
import { startTestService } from "../test/support/test-service.ts";
import { waitFor } from "../test/support/events.ts";
import { makeTestSource } from "./test-source.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const seconds = arg("seconds", 30);
/** Plain jobs per backend, interleaved (native, wasm chunked, wasm per-rendition); medians are printed. */
const rounds = Math.max(1, arg("rounds", 3));
if (!(await hasNativeFfmpeg())) {
  console.error("bench:transcode needs ffmpeg on PATH (apt-get install ffmpeg) for the native backend and the bare baseline.");
  process.exit(2);
}
const out = join(import.meta.dir, ".out", "transcode");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const input = join(out, `input-720p-${seconds}s.mp4`);
makeTestSource(input, seconds);

// The default ladder (360p/720p/1080p, capped at the source: 360p + 720p) and the default mkv download of the top rung.
const ladder = ["360p", "720p", "1080p"].map((n) => STANDARD_RUNGS[n]!);
const downloads = [{ rung: "720p", format: "mkv" as const }];
const job = (name: string): TranscodeJob => {
  const outDir = join(out, name);
  mkdirSync(outDir, { recursive: true });
  return { input, outDir, ladder, downloads };
};
const drmKey = { keyId: randomKeyHex(), key: randomKeyHex() };

/** CPU seconds of this process (all threads: the wasm workers) and of its exited children (ffmpeg, the packager), from /proc/self/stat. */
function cpuSeconds(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime, stime, cutime, cstime: fields 14-17, in clock ticks (100 per second on Linux).
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
}

async function timed(t: Transcoder, name: string, drm = false) {
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  const cpu0 = cpuSeconds();
  const t0 = performance.now();
  const result = await t.transcode(drm ? { ...job(name), drm: drmKey } : job(name));
  const wall = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  return { wall, cpu: cpuSeconds() - cpu0, peakRss, packaging: result.packagingMs / 1000 };
}

// (c) Record the native backend's command lines, grouped by what ran at the same
// time, then replay them with nothing around them.
const groups: string[][][] = [];
let inFlight = 0;
const native = createNativeRunner();
await runTranscodeJob(job("record"), {
  runner: {
    ...native,
    toolPaths: native.toolPaths.bind(native),
    run: (req) => {
      if (req.tool !== "ffmpeg") return native.run(req);
      if (inFlight++ === 0) groups.push([]);
      groups.at(-1)!.push(req.args);
      return native.run(req).finally(() => inFlight--);
    },
  },
  signal: new AbortController().signal,
  logger: () => {},
  transcoderId: "bench",
  preset: "veryfast",
});
// Keep the directories the job made (ffmpeg does not create them), drop the files.
for (const f of new Bun.Glob("**/*").scanSync({ cwd: join(out, "record") })) rmSync(join(out, "record", f), { force: true });
const tBare0 = performance.now();
for (const group of groups) {
  await Promise.all(
    group.map(async (args) => {
      const p = Bun.spawn(["ffmpeg", ...args], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
      const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
      if (code !== 0) throw new Error(`bare ffmpeg failed: ${stderr}`);
    }),
  );
}
const bare = (performance.now() - tBare0) / 1000;

/** The packager's CPU, from each DRM job's transcode.finished log entry. */
let packagerCpuMs = 0;
const logger = (o: Record<string, unknown>) => {
  if (o.event === "transcode.finished" && typeof o.packagingCpuMs === "number") packagerCpuMs = o.packagingCpuMs;
};
const nativeT = createTranscoder({ backend: "native", logger });
const workers = navigator.hardwareConcurrency || 1;
const wasmT = createTranscoder({ backend: "wasm", workers, logger });
// Issue 29: the former wasm layout (one run per rendition), for the before/after.
const wasmPerT = createWasmTranscoder({ workers, logger, runLayout: "per-rendition" });
// Load every worker's wasm core outside the measurement: a long-lived pool pays it once.
await Promise.all(Array.from({ length: workers }, () => wasmT.probe(input)));
await Promise.all(Array.from({ length: workers }, () => wasmPerT.probe(input)));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const natRounds: Awaited<ReturnType<typeof timed>>[] = [];
const wasmRounds: Awaited<ReturnType<typeof timed>>[] = [];
const wasmPerRounds: Awaited<ReturnType<typeof timed>>[] = [];
for (let i = 0; i < rounds; i++) {
  natRounds.push(await timed(nativeT, "native"));
  wasmRounds.push(await timed(wasmT, "wasm"));
  wasmPerRounds.push(await timed(wasmPerT, "wasm-per"));
  const r = (x: Awaited<ReturnType<typeof timed>>) => `${x.wall.toFixed(1)} s (${x.cpu.toFixed(1)} CPU s)`;
  console.log(
    `round ${i + 1}/${rounds}: native ${r(natRounds[i]!)}, wasm chunked ${r(wasmRounds[i]!)}, wasm per-rendition ${r(wasmPerRounds[i]!)}, load ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}`,
  );
}
await wasmPerT.close();
const byWall = (xs: Awaited<ReturnType<typeof timed>>[]) => xs.find((x) => x.wall === median(xs.map((y) => y.wall)))!;
const natPlain = byWall(natRounds);
const natDrm = { ...(await timed(nativeT, "native-drm", true)), packagerCpu: packagerCpuMs / 1000 };
const wasmPlain = byWall(wasmRounds);
const wasmDrm = { ...(await timed(wasmT, "wasm-drm", true)), packagerCpu: packagerCpuMs / 1000 };
const ratios = wasmRounds.map((w, i) => w.wall / natRounds[i]!.wall);
const perRatios = wasmPerRounds.map((w, i) => w.wall / natRounds[i]!.wall);
const nat = natPlain.wall;
const wasm = wasmPlain.wall;
const peakRss = wasmPlain.peakRss;
await nativeT.close();
await wasmT.close();

const rt = (s: number) => `${(seconds / s).toFixed(2)}x realtime (${s.toFixed(1)} s)`;
console.log(`bench:transcode  ${seconds} s 1280x720 30 fps input, ladder 360p+720p HLS + 720p mkv download, x264 veryfast`);
console.log(`runs per group (run together): ${groups.map((g) => g.length).join(", ")}`);
console.log(`(c) bare ffmpeg, same args  : ${rt(bare)}`);
console.log(`(b) native backend          : ${rt(nat)}   b/c time ratio ${(nat / bare).toFixed(2)} (target <= 1.10)`);
console.log(`(a) wasm backend (${workers} workers): ${rt(wasm)}   a/c time ratio ${(wasm / bare).toFixed(2)} (target <= 6)   peak process RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
console.log(
  `wasm/native (${rounds} interleaved rounds, median): chunked ${median(ratios).toFixed(2)}x (target <= 3.0; rounds ${ratios.map((x) => x.toFixed(2)).join(", ")}), per-rendition ${median(perRatios).toFixed(2)}x (rounds ${perRatios.map((x) => x.toFixed(2)).join(", ")}); CPU s median native ${median(natRounds.map((x) => x.cpu)).toFixed(1)}, wasm chunked ${median(wasmRounds.map((x) => x.cpu)).toFixed(1)}, per-rendition ${median(wasmPerRounds.map((x) => x.cpu)).toFixed(1)}`,
);
console.log("DRM job (same source, ladder and download; rungs into MP4s, then Shaka Packager CENC DASH):");
for (const [name, plain, drm] of [
  ["native", natPlain, natDrm],
  ["wasm", wasmPlain, wasmDrm],
] as const) {
  console.log(
    `  ${name.padEnd(6)}: plain ${plain.wall.toFixed(1)} s wall, ${plain.cpu.toFixed(1)} s CPU | DRM ${drm.wall.toFixed(1)} s wall, ${drm.cpu.toFixed(1)} s CPU | DRM/plain wall ${(drm.wall / plain.wall).toFixed(3)}, CPU ${(drm.cpu / plain.cpu).toFixed(3)} | packaging ${drm.packaging.toFixed(2)} s wall = ${((100 * drm.packaging) / drm.wall).toFixed(1)} % of the DRM job (target < 10 %), packager CPU ${drm.packagerCpu.toFixed(2)} s`,
  );
}

// Time to first playable through the whole service (HTTP registration, fetch, probe, transcode, events).
const files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(input)) });
for (const backend of ["native", "wasm"]) {
  const t = await startTestService({ env: { MEDIA_BACKEND: backend } });
  const t0 = performance.now();
  const res = (await (await t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${files.port}/${backend}.mp4` } })).json()) as any;
  await waitFor(
    async () => {
      const b = (await (await t.api(`/videos/${res.data.asset.public_id}/`)).json()) as any;
      return b.data.video.status === "COMPLETED" ? true : b.data.video.status === "ERROR" ? Promise.reject(new Error(JSON.stringify(b.data.error))) : undefined;
    },
    { timeoutMs: 30 * 60_000, intervalMs: 200 },
  );
  console.log(`time to first playable, ${backend.padEnd(6)}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await t.stop();
}
files.stop(true);
rmSync(out, { recursive: true, force: true });
