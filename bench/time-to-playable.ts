/**
 * Time to first playable (issue 15): POST /videos/ with a source URL →
 * status COMPLETED (VIDEO_TRANSCODING_COMPLETED sent), through the whole
 * service (HTTP registration, fetch, probe, transcode, posters, store,
 * events), for a 30 s 720p30 H.264/AAC source served over local HTTP, on the
 * native and the wasm backend with their default settings (default ladder
 * capped at the source: 360p + 720p, mkv download of 720p, posters).
 * Against it: bare ffmpeg doing the same ladder (both rungs' HLS, same x264
 * and AAC settings, keyframes and segments) in one command line. Runs are
 * interleaved (bare, native, wasm, bare, native, ...) so a machine whose
 * load changes hurts each side alike; each run's phases come from the
 * service's own log lines (fetch, probe, encode, store and event).
 *
 * Issue 29 item 1 (early playback): each run also prints registration → playable (GET's `playable` first true
 * while TRANSCODING), and `--long` adds a generated 10-minute 1080p source (made once with ffmpeg lavfi into
 * bench/.out/sources/ and reused; no bare baseline for it), the summary printing medians of both figures per
 * source and backend against the issue's targets (30 s 720p playable < 3 s native, < 15 s wasm; 10 min 1080p
 * < 10 s native).
 *
 * Usage: npm run bench:playable [-- --runs 3 --seconds 30 --backends native,wasm --rate 0 --compare DIR --long 600 --long-backends native,wasm]
 *   --rate N: serve the source at N bytes/s (0: as fast as possible), to see
 *   how much of a slow download the transcode overlaps.
 *   --compare DIR: also run the native backend of another checkout (e.g.
 *   `git archive <commit> | tar -x -C DIR` plus a node_modules symlink) in
 *   the same interleaving, labelled `native@DIR`: before/after on one load.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { createLogger } from "../src/log.ts";
import { STANDARD_RUNGS } from "../src/orgs/org-settings.ts";
import { startTestService } from "../test/support/test-service.ts";
import { makeTestSource } from "./test-source.ts";

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : d;
};
const seconds = Number(arg("seconds", "30"));
const runs = Number(arg("runs", "3"));
const rate = Number(arg("rate", "0"));
const backends = arg("backends", "native,wasm").split(",").filter(Boolean);
const compare = arg("compare", "");
if (compare) backends.unshift(`native@${compare}`);
if (!(await hasNativeFfmpeg())) {
  console.error("bench:playable needs ffmpeg on PATH (apt-get install ffmpeg) for the native backend and the bare baseline.");
  process.exit(2);
}
const longSeconds = Number(arg("long", "600"));
const longBackends = arg("long-backends", "native,wasm").split(",").filter(Boolean);
const out = join(import.meta.dir, ".out", "playable");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const input = makeTestSource(join(out, `input-720p-${seconds}s.mp4`), seconds);
const sourceBytes = Bun.file(input).size;
/** The long source, made once and kept (generating 10 minutes of 1080p takes minutes). */
const sourcesDir = join(import.meta.dir, ".out", "sources");
mkdirSync(sourcesDir, { recursive: true });
const longInput = join(sourcesDir, `input-1080p-${longSeconds}s.mp4`);
if (longSeconds > 0 && !existsSync(longInput)) {
  console.log(`making ${longInput} (once)…`);
  makeTestSource(`${longInput}.tmp.mp4`, longSeconds, { size: "1920x1080", preset: "ultrafast" });
  renameSync(`${longInput}.tmp.mp4`, longInput);
}

/** The source over HTTP, optionally paced (64 KiB chunks at `rate` bytes/s). */
const files = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req) {
    if (new URL(req.url).pathname.startsWith("/long-")) return new Response(Bun.file(longInput));
    if (!(rate > 0)) return new Response(Bun.file(input));
    const data = new Uint8Array(require("node:fs").readFileSync(input));
    let sent = 0;
    const t0 = performance.now();
    const body = new ReadableStream({
      async pull(c) {
        if (sent >= data.length) return c.close();
        const due = t0 + (sent / rate) * 1000;
        if (due > performance.now()) await Bun.sleep(due - performance.now());
        const chunk = data.subarray(sent, sent + 65536);
        sent += chunk.length;
        c.enqueue(chunk);
      },
    });
    return new Response(body, { headers: { "content-length": String(data.length), "content-type": "video/mp4" } });
  },
});

/** The same ladder by hand, in one ffmpeg command line: one decode, split, two x264 encoders, one HLS muxer. */
function bareArgs(dir: string): string[] {
  const r = ["360p", "720p"].map((n) => STANDARD_RUNGS[n]!);
  const gop = ["-g", "120", "-keyint_min", "120", "-sc_threshold", "0", "-force_key_frames", "expr:gte(t,n_forced*4)"];
  const args = ["-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-i", input];
  args.push("-filter_complex", "[0:v:0]split=2[a][b];[a]scale=640:360,setsar=1[v0];[b]scale=1280:720,setsar=1[v1]");
  args.push("-map", "[v0]", "-map", "0:a:0", "-map", "[v1]", "-map", "0:a:0");
  args.push("-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main", "-pix_fmt", "yuv420p", ...gop, "-c:a", "aac", "-ac", "2");
  r.forEach((rung, i) => {
    const k = rung.videoBitrateKbps;
    args.push(`-b:v:${i}`, `${k}k`, `-maxrate:v:${i}`, `${Math.round(k * 1.1)}k`, `-bufsize:v:${i}`, `${k * 2}k`, `-b:a:${i}`, `${rung.audioBitrateKbps}k`);
  });
  args.push("-f", "hls", "-hls_time", "4", "-hls_playlist_type", "vod", "-hls_segment_type", "mpegts", "-hls_flags", "independent_segments");
  args.push("-hls_segment_filename", join(dir, "%v", "seg-%05d.ts"), "-master_pl_name", "master.m3u8", "-var_stream_map", "v:0,a:0,name:360p v:1,a:1,name:720p", join(dir, "%v", "index.m3u8"));
  return args;
}

async function bare(n: number): Promise<{ wall: number; cpu: number }> {
  const dir = join(out, `bare-${n}`);
  for (const r of ["360p", "720p"]) mkdirSync(join(dir, r), { recursive: true });
  const t0 = performance.now();
  const cpu0 = cpuSeconds();
  const p = Bun.spawn(["ffmpeg", ...bareArgs(dir)], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  if (code !== 0) throw new Error(`bare ffmpeg failed: ${stderr}`);
  rmSync(dir, { recursive: true, force: true });
  return { wall: (performance.now() - t0) / 1000, cpu: cpuSeconds() - cpu0 };
}

/** CPU seconds of this process (all threads: the service, the wasm workers) and of its exited children (ffmpeg), from /proc/self/stat. */
function cpuSeconds(): number {
  const stat = require("node:fs").readFileSync("/proc/self/stat", "utf8") as string;
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime, stime, cutime, cstime: fields 14-17, in clock ticks (100 per second on Linux).
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
}

interface Line {
  t: number;
  msg: string;
  event?: string;
  [k: string]: unknown;
}

/** One video through a fresh service: POST → COMPLETED, with the phases its log lines mark. */
async function playable(backend: string, n: number, source = "") {
  const lines: Line[] = [];
  const logger = createLogger({ level: "debug", write: (l) => lines.push({ ...JSON.parse(l), t: performance.now() }) });
  const [media, tree] = backend.split("@");
  const start: typeof startTestService = tree ? (await import(join(tree, "test/support/test-service.ts"))).startTestService : startTestService;
  const svc = await start({ env: { MEDIA_BACKEND: media! }, logger });
  try {
    const t0 = performance.now();
    const cpu0 = cpuSeconds();
    const res = (await (await svc.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${files.port}/${source}${backend}-${n}.mp4` } })).json()) as any;
    const id = res.data.asset.public_id;
    let playableAt = Number.NaN;
    for (;;) {
      const b = (await (await svc.api(`/videos/${id}/`)).json()) as any;
      if (b.data.video.playable && Number.isNaN(playableAt)) playableAt = (performance.now() - t0) / 1000;
      if (b.data.video.status === "COMPLETED") break;
      if (b.data.video.status === "ERROR") throw new Error(JSON.stringify(b.data.error));
      await Bun.sleep(25);
    }
    const total = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds() - cpu0;
    const at = (pred: (l: Line) => boolean) => {
      const l = lines.find(pred);
      return l ? (l.t - t0) / 1000 : Number.NaN;
    };
    const phases = {
      fetched: at((l) => l.msg === "Source fetched"),
      started: at((l) => l.msg === "Transcode started"),
      encodeStart: at((l) => l.event === "transcode.started"),
      encoded: at((l) => l.event === "transcode.finished"),
      completed: at((l) => l.msg === "Transcode completed"),
    };
    const runs = lines.filter((l) => l.event === "transcode.run_finished").map((l) => `${l.label} ${(Number(l.ms) / 1000).toFixed(1)}`);
    return { total, cpu, phases, runs, playableAt };
  } finally {
    await svc.stop();
  }
}

const f = (s: number) => (Number.isFinite(s) ? s.toFixed(2) : "-");
console.log(`bench:playable  ${seconds} s 1280x720 30 fps source (${(sourceBytes / 2 ** 20).toFixed(1)} MiB) over local HTTP${rate > 0 ? ` at ${rate} B/s` : ""}, ladder 360p+720p, 720p mkv, posters`);
const results: Record<string, number[]> = { bare: [] };
/** Issue 29: [registration → playable, → COMPLETED] per run, by "backend source". */
const early: Record<string, Array<[number, number]>> = {};
for (const b of backends) results[b] = [];
for (let n = 0; n < runs; n++) {
  const { wall: b0, cpu: bcpu } = await bare(n);
  results.bare!.push(b0);
  console.log(`run ${n + 1}: bare ffmpeg one command line: ${f(b0)} s, ${f(bcpu)} CPU s | load ${require("node:os").loadavg()[0].toFixed(1)}`);
  for (const backend of backends) {
    const r = await playable(backend, n);
    results[backend]!.push(r.total);
    early[`${backend} ${seconds} s 720p`] = [...(early[`${backend} ${seconds} s 720p`] ?? []), [r.playableAt, r.total]];
    const p = r.phases;
    console.log(
      `run ${n + 1}: ${backend.padEnd(6)} POST→playable ${f(r.playableAt)} s, POST→COMPLETED ${f(r.total)} s (${(r.total / b0).toFixed(2)}x bare), ${f(r.cpu)} CPU s | fetched ${f(p.fetched)}, probed+STARTED ${f(p.started)}, encode ${f(p.encodeStart)}→${f(p.encoded)} (${f(p.encoded - p.encodeStart)} s), COMPLETED ${f(p.completed)} | runs: ${r.runs.join(", ")}`,
    );
  }
}
const range = (xs: number[]) => `${f(Math.min(...xs))}-${f(Math.max(...xs))} s (median ${f([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!)})`;
console.log(`summary over ${runs} runs: bare ${range(results.bare!)}`);
for (const backend of backends) {
  const ratios = results[backend]!.map((t, i) => t / results.bare![i]!);
  console.log(`  ${backend.padEnd(6)} ${range(results[backend]!)}, ratio to bare ${ratios.map((x) => x.toFixed(2)).join(" / ")}`);
}
if (compare && backends.includes("native")) console.log(`  native/native@before: ${results.native!.map((t, i) => (t / results[`native@${compare}`]![i]!).toFixed(2)).join(" / ")}`);
if (backends.includes("native") && backends.includes("wasm")) {
  console.log(`  wasm/native: ${results.wasm!.map((t, i) => (t / results.native![i]!).toFixed(2)).join(" / ")}`);
}
if (longSeconds > 0) {
  for (let n = 0; n < runs; n++) {
    for (const backend of longBackends) {
      const r = await playable(backend, n, "long-");
      const key = `${backend} ${longSeconds} s 1080p`;
      early[key] = [...(early[key] ?? []), [r.playableAt, r.total]];
      console.log(`run ${n + 1}: ${key} POST→playable ${f(r.playableAt)} s, POST→COMPLETED ${f(r.total)} s, ${f(r.cpu)} CPU s | load ${require("node:os").loadavg()[0].toFixed(1)}`);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const TARGETS: Record<string, number> = { [`native ${seconds} s 720p`]: 3, [`wasm ${seconds} s 720p`]: 15, [`native ${longSeconds} s 1080p`]: 10 };
console.log("early playback (issue 29), medians:");
for (const [key, xs] of Object.entries(early)) {
  const target = TARGETS[key] ? ` (target < ${TARGETS[key]} s)` : "";
  console.log(`  ${key.padEnd(22)} POST→playable ${f(median(xs.map((x) => x[0])))} s${target}, POST→COMPLETED ${f(median(xs.map((x) => x[1])))} s`);
}
files.stop(true);
rmSync(out, { recursive: true, force: true });
