import type { Logger } from "../log.ts";
import type { AttemptOutcome, Deliver } from "./deliver.ts";
import type { AttemptResult, AttemptVerdict, DeliveryRow, DeliveryStore } from "./delivery-store.ts";
import type { EndpointStore, SendableEndpoint } from "./endpoint-store.ts";
import { nextRetryDelayMs } from "./retry-policy.ts";

export interface DispatcherOptions {
  deliveries: DeliveryStore;
  endpoints: EndpointStore;
  deliver: Deliver;
  logger: Logger;
  /** Seconds before each retry (config.webhookRetrySchedule). */
  retrySchedule: readonly number[];
  /** Attempts still running at stop get this long to finish (and be recorded) before they are cut. */
  stopGraceMs?: number;
  /** Requests in flight, all endpoints together; an endpoint with none in flight may still start one. */
  maxInFlight?: number;
  /** Requests in flight to one endpoint: a slow or dead receiver holds only these. */
  maxPerEndpoint?: number;
  /** In flight to an endpoint whose last attempts all failed (3 in a row), until one succeeds. */
  maxPerFailingEndpoint?: number;
  /** Deliveries held in memory (queued, in flight or waiting on a timer); the rest wait in the database. */
  maxQueued?: number;
  /** Outbox rows fanned out per transaction. */
  fanOutBatch?: number;
  /** How often the outbox and the due deliveries are looked at without a wake-up. */
  pollMs?: number;
  /** A retry further away than this is left in the database instead of holding a timer. */
  parkAfterMs?: number;
  /**
   * How long results gather before they are recorded in one transaction.
   * libSQL's local calls hold the event loop while they run, so without a
   * pause every result would get a transaction of its own.
   */
  recordLingerMs?: number;
  /** Finished deliveries older than this are pruned. */
  retentionMs?: number;
  random?: () => number;
}

type JobState = "queued" | "inflight" | "recording" | "waiting" | "gone";

interface Job {
  row: DeliveryRow;
  manual: boolean;
  state: JobState;
  /** Its endpoint was deleted, or a manual re-send already delivered it: finish, record, then forget. */
  dead: boolean;
  timer?: ReturnType<typeof setTimeout>;
  abort?: AbortController;
  waiters: Array<(outcome: AttemptOutcome | null) => void>;
}

interface Lane {
  queue: Job[];
  head: number;
  inflight: number;
  /** Failed attempts in a row: a failing receiver gets fewer slots, so many dead ones cannot fill the global limit. */
  failures: number;
}

const FAILING_AFTER = 3;

const SWEEP_MS = 30_000;
const PRUNE_EVERY_MS = 3_600_000;

/**
 * Turns outbox rows into signed deliveries and keeps at it until each one is
 * acknowledged, abandoned or dropped.
 *
 * - Fan-out: one write transaction per batch of outbox rows (deliveries built,
 *   rows marked), woken by the actor runtime after each commit and polled.
 * - Sending: a bounded in-memory work set, one FIFO lane per endpoint served
 *   round-robin under a global and a per-endpoint concurrency limit, so one
 *   slow receiver never holds up the others.
 * - Recording: results are group-committed (all results that arrived while the
 *   previous transaction ran go into the next one); a delivery leaves memory
 *   only once its result is durable.
 * - Crash safety: the database is the truth. Whatever was not recorded is
 *   still `pending` and is loaded again on start, with the same id and bytes.
 */
export function createDispatcher(opts: DispatcherOptions) {
  const { deliveries, endpoints, deliver } = opts;
  const log = opts.logger.child({ component: "webhooks" });
  const maxInFlight = opts.maxInFlight ?? 256;
  const maxPerEndpoint = opts.maxPerEndpoint ?? 16;
  const maxPerFailing = Math.min(maxPerEndpoint, opts.maxPerFailingEndpoint ?? 2);
  const maxQueued = opts.maxQueued ?? 10_000;
  const fanOutBatch = opts.fanOutBatch ?? 500;
  const pollMs = opts.pollMs ?? 500;
  const parkAfterMs = opts.parkAfterMs ?? 60_000;
  const retentionMs = opts.retentionMs ?? 30 * 86_400_000;
  const random = opts.random ?? Math.random;
  const lingerMs = opts.recordLingerMs ?? 2;

  const auto = new Map<string, Job>();
  const manual = new Map<string, Job>();
  const endpointById = new Map<string, SendableEndpoint>();
  const removed = new Set<string>();
  const lanes = new Map<string, Lane>();
  const ready = new Set<Lane>();
  let inflight = 0;
  let results: Array<{ job: Job; result: AttemptResult; outcome: AttemptOutcome }> = [];
  let flushing: Promise<void> | null = null;
  let fanning: Promise<void> | null = null;
  let fanAgain = false;
  let loading: Promise<void> | null = null;
  let backlog = true;
  let parkedDue: number | null = null;
  let lastSweep = 0;
  let lastPrune = Date.now();
  let stopped = true;
  let ticker: ReturnType<typeof setInterval> | undefined;
  const counters = { sent: 0, delivered: 0, failed: 0, abandoned: 0 };
  const unreadableSecrets = new Set<string>();

  const tagsOf = (row: DeliveryRow) => ({ delivery_id: row.id, endpoint_id: row.endpointId, org_id: row.orgId });

  function laneOf(endpointId: string): Lane {
    let lane = lanes.get(endpointId);
    if (!lane) lanes.set(endpointId, (lane = { queue: [], head: 0, inflight: 0, failures: 0 }));
    return lane;
  }

  function settleWaiters(job: Job, outcome: AttemptOutcome | null) {
    const waiters = job.waiters;
    job.waiters = [];
    for (const w of waiters) w(outcome);
  }

  function mapOf(job: Job) {
    return job.manual ? manual : auto;
  }

  /** Takes a job out of memory for good (its row in the database stays as it is). */
  function forget(job: Job) {
    if (job.timer) clearTimeout(job.timer);
    job.timer = undefined;
    job.state = "gone";
    if (mapOf(job).get(job.row.id) === job) mapOf(job).delete(job.row.id);
    settleWaiters(job, null);
  }

  function enqueue(job: Job, front = false) {
    if (stopped || job.dead || removed.has(job.row.endpointId) || !endpointById.has(job.row.endpointId)) return forget(job);
    job.state = "queued";
    const lane = laneOf(job.row.endpointId);
    if (front) lane.queue.splice(lane.head, 0, job);
    else lane.queue.push(job);
    ready.add(lane);
    pump();
  }

  /** Arms a timer for a retry that is near, or leaves a far one to the database. */
  function waitOrPark(job: Job, at: number) {
    const delay = at - Date.now();
    if (delay <= 0) return enqueue(job);
    if (delay > parkAfterMs) {
      forget(job);
      parkedDue = parkedDue === null ? at : Math.min(parkedDue, at);
      return;
    }
    job.state = "waiting";
    job.timer = setTimeout(() => {
      job.timer = undefined;
      if (job.state === "waiting") enqueue(job);
    }, delay);
  }

  function admit(row: DeliveryRow, waiter?: (o: AttemptOutcome | null) => void) {
    const existing = auto.get(row.id);
    if (existing) {
      if (waiter) existing.waiters.push(waiter);
      return;
    }
    if (auto.size >= maxQueued) {
      backlog = true;
      waiter?.(null);
      return;
    }
    const job: Job = { row: { ...row }, manual: false, state: "queued", dead: false, waiters: waiter ? [waiter] : [] };
    auto.set(row.id, job);
    waitOrPark(job, row.nextAttemptAt ?? 0);
  }

  function pump() {
    let started = true;
    while (!stopped && started && ready.size > 0) {
      started = false;
      for (const lane of ready) {
        if (lane.inflight >= (lane.failures >= FAILING_AFTER ? maxPerFailing : maxPerEndpoint)) continue;
        // Past the overall limit only an endpoint with nothing in flight may start one:
        // however many receivers hang, every endpoint keeps moving.
        if (inflight >= maxInFlight && lane.inflight > 0) continue;
        const job = lane.queue[lane.head]!;
        lane.queue[lane.head++] = undefined as never;
        if (lane.head >= lane.queue.length) {
          lane.queue = [];
          lane.head = 0;
          ready.delete(lane);
        } else if (lane.head > 1024 && lane.head * 2 > lane.queue.length) {
          lane.queue = lane.queue.slice(lane.head);
          lane.head = 0;
        }
        if (job.state !== "queued") continue; // forgotten while it waited in the lane
        start(job, lane);
        started = true;
        if (ready.has(lane)) {
          // To the back of the round: a slot that frees goes to the next endpoint in turn.
          ready.delete(lane);
          ready.add(lane);
        }
      }
    }
  }

  function start(job: Job, lane: Lane) {
    const endpoint = endpointById.get(job.row.endpointId);
    if (!endpoint) return forget(job);
    job.state = "inflight";
    job.abort = new AbortController();
    inflight++;
    lane.inflight++;
    counters.sent++;
    const attempt = endpoint.secret === null ? unsignable(endpoint) : deliver({ url: endpoint.url, secret: endpoint.secret, event: job.row.event, deliveryId: job.row.id, body: job.row.body }, job.abort.signal);
    attempt
      .catch((err): AttemptOutcome => {
        log.error("Cannot deliver a webhook", { err, ...tagsOf(job.row) });
        return { ok: false, startedAt: Date.now(), durationMs: 0, statusCode: null, error: "Internal error while sending", aborted: false };
      })
      .then((outcome) => finish(job, lane, outcome))
      .catch((err) => log.error("Cannot finish a webhook attempt", { err, ...tagsOf(job.row) }));
  }

  /** An endpoint whose sealed secret no longer opens: nothing is sent, the attempt fails (and is retried, then abandoned). */
  async function unsignable(endpoint: SendableEndpoint): Promise<AttemptOutcome> {
    if (!unreadableSecrets.has(endpoint.id)) {
      unreadableSecrets.add(endpoint.id);
      log.error("Cannot sign webhook deliveries: the endpoint's signing secret does not open (was SECRET_KEY changed?)", { endpoint_id: endpoint.id, org_id: endpoint.orgId });
    }
    return { ok: false, startedAt: Date.now(), durationMs: 0, statusCode: null, error: "Cannot sign: the signing secret is unreadable", aborted: false };
  }

  function verdictOf(job: Job, outcome: AttemptOutcome): AttemptVerdict {
    if (outcome.ok) return { kind: "delivered" };
    if (job.manual) return { kind: "unchanged" };
    const delay = nextRetryDelayMs(opts.retrySchedule, job.row.attempts + 1, random);
    return delay === null ? { kind: "abandoned" } : { kind: "retry", at: Date.now() + delay };
  }

  function finish(job: Job, lane: Lane, outcome: AttemptOutcome) {
    inflight--;
    lane.inflight--;
    job.abort = undefined;
    if (outcome.aborted) {
      // Cut by shutdown: not an attempt. Still pending in the database, sent again after restart.
      forget(job);
    } else {
      const verdict = verdictOf(job, outcome);
      if (outcome.ok) counters.delivered++;
      else counters.failed++;
      lane.failures = outcome.ok ? 0 : lane.failures + 1;
      const { startedAt, durationMs, statusCode, error } = outcome;
      job.state = "recording";
      results.push({ job, outcome, result: { deliveryId: job.row.id, manual: job.manual, startedAt, durationMs, statusCode, error, verdict } });
      scheduleFlush();
    }
    pump();
  }

  function settle(job: Job, result: AttemptResult, outcome: AttemptOutcome) {
    const { verdict } = result;
    const tags = tagsOf(job.row);
    if (verdict.kind === "abandoned") {
      counters.abandoned++;
      log.warn("Webhook delivery abandoned after its last retry", { ...tags, attempts: job.row.attempts + 1, error: result.error });
    } else if (!outcome.ok) {
      log.debug("Webhook attempt failed", { ...tags, status_code: result.statusCode, error: result.error, manual: job.manual });
    }
    settleWaiters(job, outcome);
    if (job.manual) {
      if (verdict.kind === "delivered") {
        const twin = auto.get(job.row.id);
        if (twin) {
          twin.dead = true;
          if (twin.state === "queued" || twin.state === "waiting") forget(twin);
        }
      }
      return forget(job);
    }
    if (verdict.kind !== "retry" || job.dead || stopped || removed.has(job.row.endpointId)) return forget(job);
    job.row.attempts++;
    job.row.nextAttemptAt = verdict.at;
    waitOrPark(job, verdict.at);
  }

  async function flushOnce(): Promise<void> {
    const batch = results;
    results = [];
    if (batch.length === 0) return;
    try {
      await deliveries.record(batch.map((b) => b.result));
    } catch (err) {
      log.error("Cannot record webhook attempts", { err, count: batch.length, delivery_ids: batch.slice(0, 20).map((b) => b.job.row.id) });
      results = batch.concat(results);
      if (!stopped) await Bun.sleep(1000);
      return;
    }
    for (const b of batch) settle(b.job, b.result, b.outcome);
  }

  function scheduleFlush() {
    if (flushing) return;
    flushing = Bun.sleep(lingerMs)
      .then(flushOnce)
      .catch((err) => log.error("Cannot settle webhook attempts", { err }))
      .finally(() => {
        flushing = null;
        if (results.length > 0 && !stopped) scheduleFlush();
      });
  }

  async function fanOutLoop(): Promise<void> {
    do {
      fanAgain = false;
      const { deliveries: built, endpoints: active, events } = await deliveries.fanOut(fanOutBatch);
      for (const ep of active) if (!removed.has(ep.id)) endpointById.set(ep.id, ep);
      for (const row of built) admit(row);
      if (events === fanOutBatch) fanAgain = true;
    } while (fanAgain && !stopped);
  }

  /** Fans out what the outbox holds; a call while a run is under way makes that run go round again. */
  function wake(): void {
    if (stopped) return;
    if (fanning) {
      fanAgain = true;
      return;
    }
    fanning = fanOutLoop()
      .catch((err) => log.error("Cannot fan out outbox events to webhook endpoints", { err }))
      .finally(() => {
        fanning = null;
      });
  }

  async function ensureEndpoints(ids: string[]): Promise<void> {
    const missing = [...new Set(ids)].filter((id) => !endpointById.has(id) && !removed.has(id));
    for (const ep of await endpoints.sendableByIds(missing)) if (!removed.has(ep.id)) endpointById.set(ep.id, ep);
  }

  async function loadDueOnce(): Promise<void> {
    const now = Date.now();
    const room = maxQueued - auto.size;
    if (room <= 0) {
      backlog = true;
      return;
    }
    const limit = room + auto.size;
    const ids = await deliveries.dueIds(now, limit);
    backlog = ids.length === limit;
    const fresh = ids.filter((id) => !auto.has(id)).slice(0, room);
    if (fresh.length > 0) {
      const rows = await deliveries.byIds(fresh);
      await ensureEndpoints(rows.map((r) => r.endpointId));
      for (const row of rows) if (row.status === "pending" && !stopped) admit(row);
    }
    parkedDue = await deliveries.nextDueAfter(now);
    lastSweep = now;
  }

  /** Loads pending deliveries that are due and not in memory (after a restart, a backlog, a parked retry). */
  function loadDue(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (!loading) {
      loading = loadDueOnce()
        .catch((err) => log.error("Cannot load due webhook deliveries", { err }))
        .finally(() => {
          loading = null;
        });
    }
    return loading;
  }

  function tick() {
    wake();
    const now = Date.now();
    if (backlog || (parkedDue !== null && parkedDue <= now) || now - lastSweep >= SWEEP_MS) void loadDue();
    if (now - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = now;
      deliveries
        .prune(now - retentionMs)
        .then((n) => n > 0 && log.info("Pruned old webhook deliveries", { count: n }))
        .catch((err) => log.error("Cannot prune old webhook deliveries", { err }));
    }
  }

  return {
    async start(): Promise<void> {
      if (!stopped) return;
      stopped = false;
      ticker = setInterval(tick, pollMs);
      ticker.unref?.();
      await loadDue();
      wake();
    },

    /**
     * Stops taking work, lets attempts in flight finish for up to
     * `stopGraceMs`, cuts the rest (they stay pending and are re-sent after a
     * restart, same id and bytes) and records every result it has.
     */
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (ticker) clearInterval(ticker);
      for (const job of [...auto.values(), ...manual.values()]) if (job.state === "waiting" || job.state === "queued") forget(job);
      await fanning;
      await loading;
      const deadline = Date.now() + (opts.stopGraceMs ?? 5000);
      while (inflight > 0 && Date.now() < deadline) await Bun.sleep(10);
      for (const job of [...auto.values(), ...manual.values()]) job.abort?.abort();
      const cutDeadline = Date.now() + 1000;
      while (inflight > 0 && Date.now() < cutDeadline) await Bun.sleep(5);
      for (let i = 0; i < 3 && (flushing || results.length > 0); i++) {
        await flushing;
        if (results.length > 0) await flushOnce();
      }
      for (const job of [...auto.values(), ...manual.values()]) forget(job);
      lanes.clear();
      ready.clear();
    },

    wake,

    /** The endpoint was deleted: nothing more is sent to it, armed retry timers included. */
    forgetEndpoint(endpointId: string): void {
      removed.add(endpointId);
      endpointById.delete(endpointId);
      for (const job of [...auto.values(), ...manual.values()]) {
        if (job.row.endpointId !== endpointId) continue;
        job.dead = true;
        if (job.state === "queued" || job.state === "waiting") forget(job);
      }
    },

    /**
     * One immediate attempt of an existing delivery, same id and bytes, outside
     * the retry schedule. Resolves with its outcome, or null if it was not made.
     */
    async resend(row: DeliveryRow): Promise<AttemptOutcome | null> {
      if (stopped) return null;
      await ensureEndpoints([row.endpointId]);
      if (!endpointById.has(row.endpointId)) return null;
      return new Promise((resolve) => {
        const existing = manual.get(row.id);
        if (existing) return existing.waiters.push(resolve);
        const job: Job = { row: { ...row }, manual: true, state: "queued", dead: false, waiters: [resolve] };
        manual.set(row.id, job);
        enqueue(job, true);
      });
    },

    /** Creates a delivery of `event` with `data` for one endpoint and sends it through the usual path. */
    async sendOne(endpointId: string, event: string, data: Record<string, unknown>, opts: { test: boolean }): Promise<{ row: DeliveryRow; outcome: Promise<AttemptOutcome | null> } | null> {
      await ensureEndpoints([endpointId]);
      const endpoint = endpointById.get(endpointId);
      if (!endpoint) return null;
      const row = await deliveries.insertOne(endpoint, event, data, opts);
      const outcome = new Promise<AttemptOutcome | null>((resolve) => (stopped ? resolve(null) : admit(row, resolve)));
      return { row, outcome };
    },

    stats() {
      return { ...counters, inflight, inMemory: auto.size + manual.size, pendingResults: results.length };
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
