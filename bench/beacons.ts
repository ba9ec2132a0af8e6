/**
 * Issue 28's performance figures. (1) Beacon intake: `wrk` POSTs a realistic
 * batch (a text/plain JSON array of 10 events of one view of a real video of
 * an organization; 1,000 views in turn) to the real service's `POST /beacons/` and to a bare
 * `Bun.serve` that parses the same body and answers 204, rounds alternating
 * after a warm-up; prints the median round's req/s of each and the ratio
 * (target >= 0.5). (2) Rollup: 1,000,000 events (views of 100 events) go in
 * through the group-commit writer, then the view closer folds and rolls them
 * all up; prints the time and the closer's peak RSS (bounded: events are read
 * 1,000 at a time).
 *
 * Usage: npm run bench:beacons [-- --seconds 5 --rounds 3 --connections 32 --views 1000 --events 1000000 --no-rollup --unknown-ids]
 */
import { beaconBatch } from "./beacon-batch.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { videoInput } from "../machines/test-contexts.ts";
import type { BeaconEvent } from "../src/analytics/beacon-input.ts";
import { createViewCloser } from "../src/analytics/view-closer.ts";
import { analyticsRollups } from "../src/db/schema/index.ts";
import { loadConfig } from "../src/config.ts";
import { newId } from "../src/ids.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";
import { type CpuSample, cpuNow, cpuPer } from "./thread-cpu.ts";
import { requireWrk, wrk, type WrkResult, type WrkTarget } from "./wrk-run.ts";

requireWrk();
const argv = process.argv;
const num = (name: string, d: number) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? Number(argv[i + 1]) : d;
};
const seconds = num("seconds", 5);
const rounds = num("rounds", 3);
const connections = num("connections", 32);
const totalEvents = num("events", 1_000_000);
/** The same batch naming an unknown video: everything but the write (the events are dropped, the answer the same 204). */
const unknownIds = argv.includes("--unknown-ids");
const EVENTS_PER_VIEW = 100;

const dataDir = mkdtempSync(join(tmpdir(), "bench-beacons-"));
const service = await createService(
  loadConfig({
    DATA_DIR: dataDir,
    PORT: "0",
    RTMP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    // Measure the limiter's cost, not its refusals.
    BEACONS_PER_MINUTE_PER_ADDRESS: "1000000000",
    ANALYTICS_CLOSE_INTERVAL_MS: "1000",
  }),
  { logger: silentLogger, transcriber: null },
);
const { org } = await service.orgs.createOrg("bench");
const video = newId("vid");
await service.runtime.create("video", videoInput({ id: video, orgId: org.id, title: "Bench", sourceUrl: "https://example.com/a.mp4", createdAt: new Date().toISOString() }));
const { port } = await service.listen();

/** What trackPlayback sends in one batch: a view's first seconds (each of `--views` viewers in turn: one view per request, as many players send). */
const t0 = Date.now();
const batchOf = (n: number) => beaconBatch(n, video, t0);
const bodies = Array.from({ length: num("views", 1000) }, (_, n) => batchOf(n));
const batch = bodies[0]!;
const headers = { "content-type": "text/plain;charset=UTF-8", "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36" };
const full: WrkTarget = { url: `http://127.0.0.1:${port}/beacons/`, method: "POST", headers, bodies: unknownIds ? bodies.map((b) => b.replaceAll(video, "vid_nothere")) : bodies };
const check = await fetch(full.url, { method: "POST", headers, body: batch });
if (check.status !== 204) throw new Error(`the service answered ${check.status}: ${await check.text()}`);

const bareServer = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    JSON.parse(await req.text());
    return new Response(null, { status: 204, headers: { "access-control-allow-origin": "*" } });
  },
});
const bare: WrkTarget = { ...full, url: `http://127.0.0.1:${bareServer.port}/beacons/` };

interface Round {
  wrk: WrkResult;
  /** CPU milliseconds of this process per 1,000 requests: the main thread (the event loop) and all threads. */
  cpu: CpuSample;
}
/** One wrk round; the CPU counted until the writer has stored what the round sent. */
async function load(t: WrkTarget, s = seconds): Promise<Round> {
  const before = cpuNow();
  const r = await wrk(t, { seconds: s, connections });
  await service.analytics.writer.flush();
  return { wrk: r, cpu: cpuPer(before, cpuNow(), r.requests) };
}
const median = (xs: Round[]) => [...xs].sort((a, b) => a.wrk.rps - b.wrk.rps)[Math.floor(xs.length / 2)]!;
const medianOf = (xs: Round[], f: (r: Round) => number) => [...xs].map(f).sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const droppedBefore = service.analytics.writer.dropped;
await load(bare, 1);
await load(full, 1);
const b: Round[] = [];
const f: Round[] = [];
for (let i = 0; i < rounds; i++) {
  b.push(await load(bare));
  f.push(await load(full));
}
bareServer.stop(true);
await service.analytics.writer.flush();
const mb = median(b);
const mf = median(f);
const fmt = ({ wrk: r }: Round) =>
  `${Math.round(r.rps).toLocaleString("en")} req/s (${Math.round(r.rps * 10).toLocaleString("en")} events/s), p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, non-2xx ${r.non2xx}, socket errors ${r.socketErrors}`;
const cpu = (xs: Round[]) => `CPU per 1,000 requests (median round): main thread ${medianOf(xs, (r) => r.cpu.mainMs).toFixed(0)} ms, all threads ${medianOf(xs, (r) => r.cpu.processMs).toFixed(0)} ms`;
const cpuRatio = medianOf(b, (r) => r.cpu.mainMs) / medianOf(f, (r) => r.cpu.mainMs);
console.log(
  `POST /beacons/ (10 events a batch, ${bodies.length} views in turn${unknownIds ? " of an unknown video: not stored" : ""}, ${connections} connections, ${rounds} x ${seconds} s, median round)`,
);
console.log(`  bare Bun.serve:  ${fmt(mb)}`);
console.log(`                   ${cpu(b)}`);
console.log(`  vidlive:         ${fmt(mf)}`);
console.log(`                   ${cpu(f)}`);
console.log(`  ratio:           ${(mf.wrk.rps / mb.wrk.rps).toFixed(2)} (target >= 0.5); events dropped past the writer's bound: ${service.analytics.writer.dropped - droppedBefore}`);
console.log(`  main-thread CPU ratio (bare ÷ vidlive per request): ${cpuRatio.toFixed(2)}`);

if (!argv.includes("--no-rollup")) {
  // The service's own closer would race the measured one: stop it and work on its database.
  await service.analytics.closer.stop();
  const views = Math.ceil(totalEvents / EVENTS_PER_VIEW);
  const asset = { orgId: org.id, kind: "video" as const, signed: false };
  const traits = { country: "GB", browser: "Chrome", os: "Linux", deviceType: "desktop" };
  const start = performance.now();
  const base = Date.now() - 3600_000;
  let sent = 0;
  for (let v = 0; v < views; v++) {
    const viewId = `roll-${v}`;
    const events: BeaconEvent[] = [];
    for (let i = 0; i < EVENTS_PER_VIEW && sent < totalEvents; i++, sent++) {
      const type = i === 0 ? "viewstart" : i === 1 ? "playing" : i === EVENTS_PER_VIEW - 1 ? "viewend" : i % 10 === 5 ? "waiting" : i % 10 === 6 ? "playing" : "heartbeat";
      const e: BeaconEvent = {
        viewId,
        viewerId: `viewer-${v % 5000}`,
        assetId: video,
        assetKind: "video",
        type,
        t: base + i * 1000,
        playerTime: i,
        height: null,
        bitrate: null,
        code: null,
        startupMs: type === "playing" && i === 1 ? 400 : null,
        token: null,
      };
      events.push(e);
    }
    // As players send them: bodies of 10 events, 10 s apart.
    for (let b = 0; b * 10 < events.length; b++) service.analytics.writer.add({ asset, traits, receivedAt: base + (v % 60) * 1000 + b * 10_000, events: events.slice(b * 10, b * 10 + 10) });
    if (v % 400 === 399) await service.analytics.writer.flush();
  }
  await service.analytics.writer.flush();
  const written = performance.now() - start;
  const closer = createViewCloser({ database: service.database, logger: silentLogger, now: () => Date.now() + 120_000 });
  Bun.gc(true);
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  const closeStart = performance.now();
  let closed = 0;
  for (;;) {
    const n = await closer.sweep();
    if (n === 0) break;
    closed += n;
  }
  const closing = performance.now() - closeStart;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  const [sum] = await service.database.db
    .select({ views: sql<number>`sum(${analyticsRollups.views})` })
    .from(analyticsRollups)
    .where(sql`${analyticsRollups.granularity} = 'day'`);
  const MB = (n: number) => `${(n / 1048576).toFixed(0)} MB`;
  console.log(`Rollup of ${sent.toLocaleString("en")} events (${views.toLocaleString("en")} views of ${EVENTS_PER_VIEW})`);
  console.log(`  written through the group-commit writer in ${(written / 1000).toFixed(1)} s (${Math.round(sent / (written / 1000)).toLocaleString("en")} events/s)`);
  console.log(
    `  closed and rolled up ${closed.toLocaleString("en")} views in ${(closing / 1000).toFixed(1)} s; RSS ${MB(rssBefore)} before, peak ${MB(peak)} while closing; day rollups count ${sum?.views} views`,
  );
}

await service.stop();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
