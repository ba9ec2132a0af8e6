/**
 * What posters (thumbnail + storyboard sprite, issue 16) add to a transcode:
 * the same 30 s 720p job (default ladder capped at the source: 360p + 720p,
 * mkv download of 720p) with and without `posters`, rounds interleaved so a
 * busy machine slows both alike. Native: wall and CPU seconds (this process
 * and its ffmpeg children); wasm: wall seconds, and the 360p run's own time
 * (the run that carries the posters) from the pool's `wasm.run_finished` log.
 * Usage: bun bench/posters.ts [--seconds 30] [--rounds 3] [--wasm-rounds 2]
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createTranscoder, type TranscodeJob, type Transcoder } from "../media/transcoder/index.ts";
import { STANDARD_RUNGS } from "../src/orgs/org-settings.ts";
import { makeTestSource } from "./test-source.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const seconds = arg("seconds", 30);
const rounds = arg("rounds", 3);
const wasmRounds = arg("wasm-rounds", 2);

const out = join(import.meta.dir, ".out", "posters");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const input = makeTestSource(join(out, `input-720p-${seconds}s.mp4`), seconds);
const ladder = ["360p", "720p", "1080p"].map((n) => STANDARD_RUNGS[n]!);
const job = (name: string, posters: boolean): TranscodeJob => {
  const outDir = join(out, name);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  return { input, outDir, ladder, downloads: [{ rung: "720p", format: "mkv" }], posters };
};

/** CPU seconds of this process (all threads: the wasm workers) and of its exited children (ffmpeg), from /proc/self/stat. */
function cpuSeconds(): number {
  const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
}

/** Per-run times logged by the wasm pool during the current job. */
let runMs: number[] = [];

async function timed(t: Transcoder, name: string, posters: boolean) {
  runMs = [];
  const cpu0 = cpuSeconds();
  const t0 = performance.now();
  const r = await t.transcode(job(name, posters));
  if (posters && !r.posters) throw new Error("no posters were made");
  return { wall: (performance.now() - t0) / 1000, cpu: cpuSeconds() - cpu0, runs: [...runMs].sort((a, b) => a - b) };
}

const fmt = (xs: number[]) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)} (mean ${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2)})`;

async function bench(backend: "native" | "wasm", n: number) {
  const t = createTranscoder({
    backend,
    logger: (o) => {
      if (o.event === "wasm.run_finished" && typeof o.ms === "number") runMs.push(o.ms);
    },
  });
  const plain: Awaited<ReturnType<typeof timed>>[] = [];
  const withPosters: typeof plain = [];
  // A warm-up job (loads the wasm core; fills the page cache for native).
  await timed(t, `${backend}-warmup`, false);
  for (let i = 0; i < n; i++) {
    // Alternate which goes first, so a drift in the machine's load is shared.
    const order = i % 2 === 0 ? [false, true] : [true, false];
    for (const p of order) (p ? withPosters : plain).push(await timed(t, `${backend}-${p ? "posters" : "plain"}`, p));
  }
  await t.close();
  console.log(`${backend}: ${n} rounds, ${seconds} s 720p source`);
  console.log(`  wall  plain ${fmt(plain.map((r) => r.wall))} s, posters ${fmt(withPosters.map((r) => r.wall))} s`);
  console.log(`  cpu   plain ${fmt(plain.map((r) => r.cpu))} s, posters ${fmt(withPosters.map((r) => r.cpu))} s`);
  if (backend === "wasm") {
    // The shortest HLS run is the 360p one (the downloads run is shorter still: first entry); posters ride on the 360p run.
    console.log(`  runs  plain ${plain.map((r) => r.runs.map((ms) => (ms / 1000).toFixed(1)).join("/")).join(", ")} s`);
    console.log(`  runs  posters ${withPosters.map((r) => r.runs.map((ms) => (ms / 1000).toFixed(1)).join("/")).join(", ")} s`);
  }
}

if (rounds > 0) await bench("native", rounds);
if (wasmRounds > 0) await bench("wasm", wasmRounds);
rmSync(out, { recursive: true, force: true });
process.exit(0);
