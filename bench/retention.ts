/**
 * Retention under load: do the tables and the database file stay flat while
 * events keep flowing, instead of growing with the service's age?
 *
 * The real service (dispatcher running) with short retention periods, one
 * webhook endpoint on an HTTPS receiver (worker thread, answers 204 at once),
 * and N events written to the outbox in batches of 500 (the path every
 * domain event takes: outbox → fan-out → delivery → attempt). Each batch also
 * writes 50 finished `work` rows, as the actor timers and messages of that
 * many events would. The generator keeps at most `--backlog` events ahead of
 * the receiver, so it runs at the dispatcher's speed. Retention is the
 * service's own: the `retention` work row its work runner sweeps and
 * re-queues every `--interval-ms` (RETENTION_INTERVAL_MS).
 *
 * Every `--report-ms` it prints the row counts of outbox, webhook_deliveries,
 * webhook_attempts and work, and the database file and WAL sizes. Once the
 * first period has passed, the counts hold at about rate × (period +
 * interval) instead of growing; after the last event they fall to ~0.
 *
 * Usage: npm run bench:retention [-- --events 1000000 --retention-ms 20000 --interval-ms 5000 --report-ms 5000 --backlog 20000]
 */
import { startReceiverWorker } from "./receiver-client.ts";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.ts";
import { outbox, work } from "../src/db/schema/index.ts";
import { newId } from "../src/ids.ts";
import { createLogger } from "../src/log.ts";
import { RETENTION_TARGETS } from "../src/retention/retention-rules.ts";
import { createService } from "../src/service.ts";
import { sampleEventData } from "../src/webhooks/sample-events.ts";
import type { WorkPayload } from "../src/work/work-types.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const N = arg("events", 1_000_000);
const RETENTION_MS = arg("retention-ms", 20_000);
const INTERVAL_MS = arg("interval-ms", 5_000);
const REPORT_MS = arg("report-ms", 5_000);
const BACKLOG = arg("backlog", 20_000);
const BATCH = 500;
const WORK_PER_BATCH = 50;
const CA_FILE = join(import.meta.dir, "../fixtures/tls/ca.pem");

// Receiver thread (bench/webhook-receiver-worker.ts): drained at every report, so only counts are kept.
const receiver = await startReceiverWorker();
const { port } = receiver;
let arrived = 0;
let draining: Promise<void> = Promise.resolve();
/** One drain at a time: two in flight would both take the first answer. */
function drain(): Promise<void> {
  draining = draining.then(async () => {
    arrived += (await receiver.drain()).ids.length;
  });
  return draining;
}

const dataDir = mkdtempSync(join(tmpdir(), "bench-retention-"));
const periods = String(RETENTION_MS);
const config = loadConfig({
  DATA_DIR: dataDir,
  PORT: "0",
  RTMP_PORT: "0",
  HOST: "127.0.0.1",
  LOG_LEVEL: "silent",
  ALLOW_PRIVATE_NETWORK: "1",
  WEBHOOK_CA_FILE: CA_FILE,
  OUTBOX_RETENTION_MS: periods,
  WEBHOOK_DELIVERY_RETENTION_MS: periods,
  WORK_RETENTION_MS: periods,
  UPLOAD_RETENTION_MS: periods,
  DELETED_ACTOR_RETENTION_MS: periods,
  RETENTION_INTERVAL_MS: String(INTERVAL_MS),
});
// The service's own log, read back for the figures: its one line per retention sweep (rows deleted, time,
// the longest hold of the write queue). Errors are printed.
const sweeps: Array<{ ms: number; deleted: number; maxBatchMs: number; heldMs: number; batches: number }> = [];
const logger = createLogger({
  level: "info",
  write: (line) => {
    const l = JSON.parse(line);
    if (l.level === "error") console.error(line);
    if (l.msg !== "Retention sweep") return;
    const deleted = RETENTION_TARGETS.reduce((a, t) => a + Number(l[t] ?? 0), 0);
    sweeps.push({ ms: l.duration_ms, deleted, maxBatchMs: l.max_batch_ms, heldMs: l.held_ms, batches: l.batches });
  },
});
// Retention runs as in production: the service enqueues the one `retention` work row at listen and its work runner sweeps and re-queues it.
const service = await createService(config, { logger });
await service.listen();
const { org } = await service.orgs.createOrg("bench");
await service.webhooks.endpoints.create(org.id, { url: `https://127.0.0.1:${port}/hook`, events: ["VIDEO_UPLOADED"], fields: [], description: null });
const payload = sampleEventData("VIDEO_UPLOADED", { baseUrl: "https://video.example.com" });

// Figures.
const dbPath = config.databaseUrl.slice("file:".length);
const size = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
async function count(table: string): Promise<number> {
  const res = await service.database.client.execute(`select count(*) from ${table}`);
  return Number(res.rows[0]![0]);
}
interface Sample {
  t: number;
  inserted: number;
  arrived: number;
  outbox: number;
  deliveries: number;
  attempts: number;
  work: number;
  db: number;
  wal: number;
}
const samples: Sample[] = [];
const t0 = Date.now();
let inserted = 0;
async function sample(): Promise<Sample> {
  await drain();
  const s: Sample = {
    t: (Date.now() - t0) / 1000,
    inserted,
    arrived,
    outbox: await count("outbox"),
    deliveries: await count("webhook_deliveries"),
    attempts: await count("webhook_attempts"),
    work: await count("work"),
    db: size(dbPath),
    wal: size(`${dbPath}-wal`),
  };
  samples.push(s);
  const w = (n: number, width = 9) => String(n).padStart(width);
  console.log(
    `${s.t.toFixed(0).padStart(5)} s  events ${w(s.inserted)}  delivered ${w(s.arrived)}  | outbox ${w(s.outbox, 7)}  deliveries ${w(s.deliveries, 7)}  attempts ${w(s.attempts, 7)}  work ${w(s.work, 6)}  | db ${mb(s.db).padStart(9)}  wal ${mb(s.wal).padStart(9)}`,
  );
  return s;
}

console.log(`bench:retention  ${N} events → 1 endpoint (https, worker thread); periods ${RETENTION_MS / 1000} s, sweep every ${INTERVAL_MS / 1000} s, batches of 500`);
let reporting = Promise.resolve();
const reporter = setInterval(() => {
  reporting = reporting.then(() => sample().then(() => undefined));
}, REPORT_MS);

// Generator: batches of 500 events (+ 50 finished work rows), at most BACKLOG ahead of the receiver.
const workPayload = {} as WorkPayload;
while (inserted < N) {
  if (inserted - arrived > BACKLOG) {
    await Bun.sleep(20);
    await drain();
    continue;
  }
  const n = Math.min(BATCH, N - inserted);
  const now = Date.now();
  const events = Array.from({ length: n }, () => ({ id: newId("evt"), orgId: org.id, entityId: newId("vid"), event: "VIDEO_UPLOADED", payload, createdAt: now }));
  const done = Array.from({ length: WORK_PER_BATCH }, () => ({
    id: newId("wrk"),
    type: "actor-timer",
    orgId: org.id,
    entityId: "vid_bench",
    payload: workPayload,
    status: "done",
    attempts: 1,
    maxAttempts: 10,
    runAfter: now,
    createdAt: now,
    updatedAt: now,
    finishedAt: now,
  }));
  await service.database.write(async (tx) => {
    await tx.insert(outbox).values(events);
    await tx.insert(work).values(done);
  });
  inserted += n;
  service.webhooks.dispatcher.wake();
}
const generated = (Date.now() - t0) / 1000;
while (arrived < N) {
  await Bun.sleep(100);
  await drain();
}
const deliveredAt = (Date.now() - t0) / 1000;
// Past the last event: one period and two sweeps, and everything settled should be gone.
await Bun.sleep(RETENTION_MS + 2 * INTERVAL_MS + REPORT_MS);
clearInterval(reporter);
await reporting;
const last = await sample();

// Steady state: from one period + one interval after the start until the last event was generated.
const steady = samples.filter((s) => s.t >= (RETENTION_MS + INTERVAL_MS) / 1000 && s.t <= generated);
const peak = (pick: (s: Sample) => number, from = steady) => Math.max(0, ...from.map(pick));
const firstHalf = steady.slice(0, Math.ceil(steady.length / 2));
const secondHalf = steady.slice(Math.ceil(steady.length / 2));
const rate = N / deliveredAt;
console.log("");
console.log(`generated ${N} events in ${generated.toFixed(0)} s, all delivered after ${deliveredAt.toFixed(0)} s (${rate.toFixed(0)} events/s end to end)`);
const sweepMs = sweeps.map((s) => s.ms);
console.log(
  `sweeps: ${sweeps.length}, ${sweeps.reduce((a, s) => a + s.deleted, 0)} rows deleted in ${sweeps.reduce((a, s) => a + s.batches, 0)} batches; sweep p50 ${pct(sweepMs, 50)} ms, max ${Math.max(0, ...sweepMs)} ms (waiting in the write queue included); inside its transactions a sweep held the write queue ${pct(
    sweeps.map((s) => s.heldMs),
    50,
  )} ms (p50), ${(
    sweeps.reduce((a, s) => a + s.heldMs, 0) /
      Math.max(
        1,
        sweeps.reduce((a, s) => a + s.batches, 0),
      )
  ).toFixed(1)} ms per batch on average, ${Math.max(0, ...sweeps.map((s) => s.maxBatchMs))} ms at most`,
);
if (steady.length >= 2) {
  console.log(
    `steady state (${steady.length} samples, t ${steady[0]!.t.toFixed(0)}–${steady.at(-1)!.t.toFixed(0)} s): peak rows first half / second half → outbox ${peak((s) => s.outbox, firstHalf)} / ${peak((s) => s.outbox, secondHalf)}, deliveries ${peak((s) => s.deliveries, firstHalf)} / ${peak((s) => s.deliveries, secondHalf)}, attempts ${peak((s) => s.attempts, firstHalf)} / ${peak((s) => s.attempts, secondHalf)}, work ${peak((s) => s.work, firstHalf)} / ${peak((s) => s.work, secondHalf)}; db ${mb(peak((s) => s.db, firstHalf))} / ${mb(peak((s) => s.db, secondHalf))}, wal ${mb(peak((s) => s.wal, firstHalf))} / ${mb(peak((s) => s.wal, secondHalf))}`,
  );
  // A row lives its period, then waits for the next sweep to start (the interval runs from the end of the last one) and reach it.
  const lifetime = (RETENTION_MS + INTERVAL_MS + pct(sweepMs, 50)) / 1000;
  console.log(
    `expected bound ≈ rate × (period + interval + sweep time) = ${Math.round(rate * lifetime)} rows per table (deliveries: + up to ${BACKLOG} pending); the file keeps the size of its largest working set (SQLite reuses freed pages, it does not shrink)`,
  );
} else {
  console.log(`run longer than one period + one interval (${(RETENTION_MS + INTERVAL_MS) / 1000} s) for a steady state: raise --events`);
}
console.log(
  `after the last event + one period: outbox ${last.outbox}, deliveries ${last.deliveries}, attempts ${last.attempts}, work ${last.work} (the retention row); db ${mb(last.db)}, wal ${mb(last.wal)}`,
);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

await service.stop();
receiver.stop();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
