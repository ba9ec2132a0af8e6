/**
 * Live HLS packaging + FLV recording cost and latency, from the 6 s fixture.
 *   bun bench/live-hls.ts            (both parts)
 *   bun bench/live-hls.ts --fast     (CPU only)
 *
 * 1. CPU: a 60 s stream (fixture looped, timestamps continued) pushed as fast as
 *    possible → CPU ms per second of media for packaging, FLV writing, and both.
 * 2. Latency: the fixture pushed at real-time pace, NORMAL then LOW → delay from
 *    a keyframe's arrival to the playlist listing its segment; CPU over the run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFlvTags } from "../media/flv/flv-reader.ts";
import type { FlvTag } from "../media/flv/flv-tag.ts";
import { createFlvWriter } from "../media/flv/flv-writer.ts";
import { createLiveHlsPackager, LIVE_HLS_LATENCY_PRESETS, type LiveHlsSegmentInfo } from "../media/hls/live-hls-packager.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/live-360p-6s.flv");
const fixture = [...readFlvTags(new Uint8Array(await Bun.file(FIXTURE).arrayBuffer()))];
const LOOP_MS = 6000;

/** The fixture repeated `loops` times as one continuous stream (sequence headers once, no end-of-sequence). */
function looped(loops: number): FlvTag[] {
  const isSeqHeader = (t: FlvTag) => t.type !== "data" && t.payload[1] === 0;
  const isEndOfSeq = (t: FlvTag) => t.type === "video" && t.payload[1] === 2;
  const out: FlvTag[] = fixture.filter((t) => t.type === "data" || isSeqHeader(t));
  const media = fixture.filter((t) => t.type !== "data" && !isSeqHeader(t) && !isEndOfSeq(t));
  for (let i = 0; i < loops; i++) for (const t of media) out.push({ ...t, timestamp: t.timestamp + i * LOOP_MS });
  return out;
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
}

async function cpuRun(label: string, tags: FlvTag[], mediaSeconds: number, hls: boolean, flv: boolean) {
  const dir = mkdtempSync(join(tmpdir(), "bench-live-hls-"));
  const packager = hls ? createLiveHlsPackager({ dir: join(dir, "hls"), ...LIVE_HLS_LATENCY_PRESETS.NORMAL }) : null;
  const writer = flv ? await createFlvWriter(join(dir, "rec.flv"), { hasAudio: true, hasVideo: true }) : null;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (const t of tags) {
    await Promise.all([packager?.push(t), writer?.write(t)]);
  }
  await Promise.all([packager?.end(), writer?.close()]);
  const cpu = cpuMs(c0);
  const wall = performance.now() - t0;
  rmSync(dir, { recursive: true, force: true });
  console.log(`${label.padEnd(22)} ${(cpu / mediaSeconds).toFixed(2).padStart(6)} CPU ms per media s   (${cpu.toFixed(0)} ms CPU, ${wall.toFixed(0)} ms wall for ${mediaSeconds} s)`);
}

/** The same real-time pacing loop doing nothing: the timer/wake-up cost to subtract. */
async function realtimeBaseline() {
  const tags = looped(2);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (const t of tags) {
    const wait = t.timestamp - (performance.now() - t0);
    if (wait > 1) await Bun.sleep(wait);
  }
  console.log(`pacing loop alone: CPU ${(cpuMs(c0) / ((2 * LOOP_MS) / 1000)).toFixed(1)} ms per media s`);
}

async function realtimeRun(preset: keyof typeof LIVE_HLS_LATENCY_PRESETS) {
  const dir = mkdtempSync(join(tmpdir(), "bench-live-hls-"));
  const segments: LiveHlsSegmentInfo[] = [];
  const packager = createLiveHlsPackager({
    dir: join(dir, "hls"),
    ...LIVE_HLS_LATENCY_PRESETS[preset],
    onSegment: (s) => segments.push(s),
  });
  const writer = await createFlvWriter(join(dir, "rec.flv"), { hasAudio: true, hasVideo: true });
  const tags = looped(2);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (const t of tags) {
    const wait = t.timestamp - (performance.now() - t0);
    if (wait > 1) await Bun.sleep(wait);
    await Promise.all([packager.push(t), writer.write(t)]);
  }
  const liveSegments = segments.length; // published while live (before end() flushes the last one)
  await Promise.all([packager.end(), writer.close()]);
  const cpu = cpuMs(c0);
  const delays = segments.slice(0, liveSegments).map((s) => s.publishedAtMs - s.firstKeyframeArrivalMs);
  rmSync(dir, { recursive: true, force: true });
  const mediaSeconds = (2 * LOOP_MS) / 1000;
  console.log(
    `${preset.padEnd(6)} keyframe→playlist delay ms: ${delays.join(", ")}  (mean ${(delays.reduce((a, b) => a + b, 0) / delays.length).toFixed(0)}); ` +
      `CPU ${(cpu / mediaSeconds).toFixed(1)} ms per media s (HLS + FLV, real-time pace)`,
  );
}

const LOOPS = 10;
const stream = looped(LOOPS);
const mediaSeconds = (LOOPS * LOOP_MS) / 1000;
console.log(`fixture: 640x360 H.264 ~0.9 Mbps + AAC 64k; ${stream.length} tags, ${mediaSeconds} s`);
await cpuRun("warm-up", looped(1), 6, true, true);
await cpuRun("HLS packaging only", stream, mediaSeconds, true, false);
await cpuRun("FLV writing only", stream, mediaSeconds, false, true);
await cpuRun("HLS + FLV", stream, mediaSeconds, true, true);
if (!process.argv.includes("--fast")) {
  await realtimeBaseline();
  await realtimeRun("NORMAL");
  await realtimeRun("LOW");
}
