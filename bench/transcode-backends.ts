/**
 * Realtime factors of the transcoder's backends against bare ffmpeg with the
 * same argument list, and the wasm worker's memory.
 *
 * For each input (the 3 s 720p fixture and a 30 s 720p file generated into
 * bench/.out/): (c) bare `ffmpeg` CLI with the exact HLS args the library
 * builds, (b) the native backend (probe + the same encode), (a) the wasm
 * backend with one worker. Ladder 360p/720p/1080p (capped: 360p+720p), no
 * downloads, x264 veryfast. Peak RSS is sampled every 20 ms while the wasm job
 * runs (whole process; the worker is the only thing working).
 * Usage: bun bench/transcode-backends.ts [--seconds 30]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildHlsArgs } from '../media/transcoder/build-ffmpeg-args.ts';
import { createNativeTranscoder } from '../media/transcoder/create-native-transcoder.ts';
import { createWasmTranscoder } from '../media/transcoder/create-wasm-transcoder.ts';
import { hasNativeFfmpeg } from '../media/transcoder/has-native-ffmpeg.ts';
import { planLadder, widthForHeight } from '../media/transcoder/plan-ladder.ts';
import type { ProbeResult, Rung, Transcoder } from '../media/transcoder/types.ts';

const argValue = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const seconds = argValue('seconds', 30);
if (!hasNativeFfmpeg()) {
  console.error('transcode-backends needs ffmpeg and ffprobe on PATH for the native backend and the bare baseline');
  process.exit(2);
}

const OUT = path.join(import.meta.dir, '.out', 'transcode-backends');
fs.rmSync(OUT, { recursive: true, force: true });
fs.mkdirSync(OUT, { recursive: true });

const LADDER: Rung[] = [
  { name: '360p', height: 360, videoBitrateKbps: 800, audioBitrateKbps: 96 },
  { name: '720p', height: 720, videoBitrateKbps: 2500, audioBitrateKbps: 128 },
  { name: '1080p', height: 1080, videoBitrateKbps: 5000, audioBitrateKbps: 128 },
];
const SEGMENT = 4;

const generated = path.join(OUT, `input-720p-${seconds}s.mp4`);
const gen = Bun.spawnSync([
  'ffmpeg', '-v', 'error', '-y',
  '-f', 'lavfi', '-i', `testsrc2=duration=${seconds}:size=1280x720:rate=25`,
  '-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}:sample_rate=44100`,
  '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-g', '25',
  '-c:a', 'aac', '-b:a', '64k', '-shortest', generated,
]);
if (gen.exitCode !== 0) throw new Error(`could not generate input: ${gen.stderr}`);
const inputs = [path.resolve(import.meta.dir, '../fixtures/av-720p-3s.mp4'), generated];

function freshDir(name: string): string {
  const dir = path.join(OUT, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** (c): exactly the library's HLS command line, nothing around it. */
function bareCli(input: string, probe: ProbeResult, outDir: string) {
  const renditions = planLadder(probe, LADDER).map((r) => ({ ...r, width: widthForHeight(probe, r.height) }));
  for (const r of renditions) fs.mkdirSync(path.join(outDir, 'hls', r.name), { recursive: true });
  const args = buildHlsArgs(
    { renditions, hasVideo: probe.hasVideo, hasAudio: probe.hasAudio, segmentSeconds: SEGMENT, frameRate: probe.frameRate, preset: 'veryfast' },
    { input, outDir },
  );
  const t0 = performance.now();
  const proc = Bun.spawnSync(['ffmpeg', ...args], { stdout: 'ignore', stderr: 'pipe' });
  const wall = (performance.now() - t0) / 1000;
  if (proc.exitCode !== 0) throw new Error(`bare ffmpeg failed: ${proc.stderr}`);
  const cpu = proc.resourceUsage ? Number(proc.resourceUsage.cpuTime.total) / 1e6 : NaN;
  return { wall, cpu };
}

async function viaBackend(t: Transcoder, input: string, outDir: string, sampleRss: boolean) {
  let peak = process.memoryUsage().rss;
  const sampler = sampleRss ? setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20) : undefined;
  const cpu0 = cpuSeconds();
  const t0 = performance.now();
  await t.transcode({ input, outDir, ladder: LADDER, downloads: [], segmentSeconds: SEGMENT });
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds() - cpu0;
  if (sampler) clearInterval(sampler);
  return { wall, cpu, peakRss: peak };
}

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;
const heapEvents: number[] = [];
const native = createNativeTranscoder();
const wasm = createWasmTranscoder({
  workers: 1,
  logger: (o) => {
    if (o.event === 'wasm.run_finished' && typeof o.heapBytes === 'number') heapEvents.push(o.heapBytes);
  },
});
// Load the core outside the measurement: a long-lived pool pays it once.
await wasm.probe(inputs[0]!);
const idleRss = process.memoryUsage().rss;

console.log(`transcode-backends: ladder 360p+720p (1080p capped), ${SEGMENT} s segments, x264 veryfast, no downloads`);
console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`process RSS with one idle loaded wasm worker: ${mb(idleRss)}`);
for (const input of inputs) {
  const probe = await native.probe(input);
  const duration = probe.durationSeconds ?? NaN;
  const rt = (s: number) => `${(duration / s).toFixed(2)}x realtime`;
  const c = bareCli(input, probe, freshDir('bare'));
  const b = await viaBackend(native, input, freshDir('native'), false);
  heapEvents.length = 0;
  const a = await viaBackend(wasm, input, freshDir('wasm'), true);
  console.log(`\n${path.basename(input)} (${duration} s, ${probe.width}x${probe.height})`);
  console.log(`  (c) bare ffmpeg CLI   ${rt(c.wall).padEnd(16)} wall ${c.wall.toFixed(2)} s  cpu ${c.cpu.toFixed(2)} s`);
  console.log(`  (b) native backend    ${rt(b.wall).padEnd(16)} wall ${b.wall.toFixed(2)} s  (b/c ${(b.wall / c.wall).toFixed(2)})`);
  console.log(
    `  (a) wasm backend      ${rt(a.wall).padEnd(16)} wall ${a.wall.toFixed(2)} s  cpu ${a.cpu.toFixed(2)} s  ` +
      `(a/c wall ${(a.wall / c.wall).toFixed(2)}, a/c cpu ${(a.cpu / c.cpu).toFixed(2)})`,
  );
  console.log(`      wasm peak process RSS ${mb(a.peakRss)} (idle ${mb(idleRss)}), core heap ${mb(Math.max(0, ...heapEvents))}`);
}
await Promise.all([native.close(), wasm.close()]);
