/**
 * CPU cost of RTMP ingest. Run: bun media/rtmp/rtmp-ingest.bench.ts
 *
 * 1. realtime: native ffmpeg (a separate process) pushes the 6 s fixture with
 *    -re; this process's CPU time is the server's cost (sink counts bytes only).
 * 2. fast: our publisher and the server in one process push the fixture 30x
 *    back to back; reports throughput and CPU per MB for both sides together.
 */
import { publish } from "./rtmp-publisher.ts";
import { FIXTURE_PATH, fixtureTags, startTestServer } from "./test-support.ts";
import type { MediaMessage } from "./publish-handlers.ts";

const tags = await fixtureTags();
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const s = await startTestServer({ logger: () => {} });
let bytes = 0;
s.decide = (_r, sink) => {
  sink.delay = (m) => {
    bytes += m.payload.length;
    sink.messages.length = 0; // keep memory flat
  };
  return { ok: true, sink };
};

if (Bun.which("ffmpeg")) {
  // Twice: the first run also pays for JIT warm-up of every code path.
  for (const run of ["cold", "warm"]) {
    bytes = 0;
    const key = `RT${run}`;
    const cpu0 = cpuMs();
    const t0 = performance.now();
    const proc = Bun.spawn(["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-i", FIXTURE_PATH, "-c", "copy", "-f", "flv", s.url(key)]);
    await proc.exited;
    await s.sinkByKey.get(key)!.closed;
    const wall = (performance.now() - t0) / 1000;
    const cpu = cpuMs() - cpu0;
    console.log(
      `realtime ${run} (ffmpeg -re, ~0.95 Mbps): ${(cpu / wall).toFixed(1)} ms CPU per second of stream ` + `(${cpu.toFixed(0)} ms over ${wall.toFixed(1)} s, ${(bytes / 1e6).toFixed(2)} MB)`,
    );
  }
} else {
  console.log("realtime: skipped (no ffmpeg on PATH)");
}

const span = Math.max(...tags.map((t) => t.timestamp)) + 40;
function* repeated(times: number): Generator<MediaMessage> {
  for (let r = 0; r < times; r++) for (const t of tags) yield { ...t, timestamp: t.timestamp + r * span };
}
bytes = 0;
const cpu0 = cpuMs();
const t0 = performance.now();
await publish({ url: s.url("FAST"), tags: repeated(30), pace: "fast" }).finished;
await s.sinkByKey.get("FAST")!.closed;
const wall = (performance.now() - t0) / 1000;
const cpu = cpuMs() - cpu0;
const mb = bytes / 1e6;
console.log(
  `fast (publisher + server in-process): ${mb.toFixed(1)} MB in ${wall.toFixed(2)} s = ${(mb / wall).toFixed(0)} MB/s, ` +
    `${(cpu / mb).toFixed(1)} ms CPU per MB (${((mb * 8) / (cpu / 1000)).toFixed(0)} Mbit of media per CPU-second)`,
);
await s.server.stop();
