/**
 * N concurrent RTMP publishers (a separate process, loopback, real-time pace,
 * ~1 Mbps each) into the full service with live HLS and recording on. For each N:
 * server CPU ms per stream-second, whether everyone kept real time, and the
 * delay from a keyframe's arrival to its segment in the playlist, against the
 * segment duration. Steps N up until real time is lost or the top step is done.
 * Then (issue 26) the LL-HLS figures of bench/live-llhls.ts: hls.js lowLatencyMode
 * latency over `--ll-seconds` (60) per run, `--ll-runs` (3) runs; SRT publish →
 * first part. `--only llhls` skips the load steps; `--ll-runs 0` the LL-HLS part.
 * `--only outputs` (issue 26, bench/live-outputs.ts): segment timing with 5 simulcast
 * outputs (one a target that never reads) against none, and CPU per output, `--runs` (3) × `--seconds`.
 * Usage: npm run bench:live [-- --seconds 12 --steps 10,25,50,100,150 --ll-runs 3 --ll-seconds 60]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";
import { benchLlHls } from "./live-llhls.ts";
import { benchOutputs } from "./live-outputs.ts";

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : d;
};
const seconds = Number(arg("seconds", "12"));
const only = arg("only", "");
const steps = only === "llhls" || only === "outputs" ? [] : arg("steps", "10,25,50,100,150").split(",").map(Number);
const llRuns = only === "outputs" ? 0 : Number(arg("ll-runs", "3"));
const outputRuns = only === "outputs" ? Number(arg("runs", "3")) : 0;
const llSeconds = Number(arg("ll-seconds", "60"));
// Publishers must never fall further behind than this (the encoder's own buffer).
const LAG_BUDGET_MS = 1000;

const dataDir = mkdtempSync(join(tmpdir(), "bench-live-"));
const service = await createService(
  loadConfig({
    DATA_DIR: dataDir,
    PORT: "0",
    RTMP_PORT: "0",
    SRT_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    LIVE_SLOTS: "100000",
    LIVE_RECONNECT_MS: "200",
    TRANSCODE_QUEUE_LIMIT: "0",
    ALLOW_PRIVATE_NETWORK: "1",
  }),
  { logger: silentLogger },
);
const { org } = await service.orgs.createOrg("bench");
await service.orgs.updateSettings(org.id, (s) => ({ ...s, transcoding: null }));
await service.listen();
// Recordings are registered but not transcoded here: this measures ingest, not the transcoder.
service.policies.transcode.concurrency = 0;

let delays: number[] = [];
let segSeconds = 0;
service.live.onSegment((_id, info, s) => {
  delays.push(info.publishedAtMs - info.firstKeyframeArrivalMs);
  segSeconds = s;
});

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
};

console.log(`bench:live  ${seconds}s per step, fixture 640x360 ~1 Mbps, NORMAL latency, HLS + FLV recording on`);
console.log("streams | server CPU ms/stream-s | publisher max lag | kf->playlist p50 / p99 (segment s) | held");
let best = 0;
for (const n of steps) {
  const streams = [];
  for (let i = 0; i < n; i++) streams.push(await service.live.livestreams.create((await service.orgs.getOrg(org.id))!, { title: `bench ${i}` }));
  delays = [];
  const cpu0 = process.cpuUsage();
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "live-publishers.ts"), String(seconds), ...streams.map((s) => s.context.rtmpUrl)], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const cpu = process.cpuUsage(cpu0);
  const r = JSON.parse(out.trim().split("\n").pop()!) as { failed: number; maxLagMs: number; mbpsPerStream: number };
  const cpuMsPerStreamSecond = (cpu.user + cpu.system) / 1000 / (n * seconds);
  // Held: every publisher kept real time and the server kept up (p99 delay within segment + 0.5 s).
  const held = r.failed === 0 && r.maxLagMs < LAG_BUDGET_MS && q(delays, 0.99) <= segSeconds * 1000 + 500;
  if (held) best = n;
  console.log(
    `${String(n).padStart(7)} | ${cpuMsPerStreamSecond.toFixed(2).padStart(21)} | ${r.maxLagMs.toFixed(0).padStart(14)} ms | ${q(delays, 0.5).toFixed(0)} / ${q(delays, 0.99).toFixed(0)} ms (${segSeconds} s) | ${held ? "yes" : "NO"}${r.failed ? ` (${r.failed} failed)` : ""}  ~${r.mbpsPerStream.toFixed(2)} Mbps/stream`,
  );
  await Bun.sleep(1000);
  for (const s of streams) await service.live.ingest.endExplicitly(s.context).catch(() => undefined);
  if (!held) break;
}
if (steps.length > 0) console.log(`largest N held in real time: ${best}  (target >= 100); delay target <= segment + 500 ms`);
if (llRuns > 0) await benchLlHls(service, org.id, { runs: llRuns, seconds: llSeconds });
if (outputRuns > 0) await benchOutputs(service, org.id, { runs: outputRuns, seconds });
await service.stop();
rmSync(dataDir, { recursive: true, force: true });
