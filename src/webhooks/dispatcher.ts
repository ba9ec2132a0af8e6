import { randomToken } from "../ids.ts";
import type { Logger } from "../log.ts";
import type { AttemptOutcome, Deliver } from "./deliver.ts";
import { createDeliveryLanes, type Lane } from "./delivery-lanes.ts";
import type { AttemptResult, AttemptVerdict, Claim, DeliveryRow, DeliveryStore } from "./delivery-store.ts";
import type { EndpointStore, SendableEndpoint } from "./endpoint-store.ts";
import { createLeaseRenewer } from "../work/lease-renewer.ts";
import { createResultRecorder } from "./result-recorder.ts";
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
  /**
   * Requests in flight, all endpoints together (default 192); past it, an
   * organization with none in flight may still start one, up to `ceiling`.
   */
  maxInFlight?: number;
  /** Requests in flight never exceeded (default 224: below Bun's 256 concurrent fetches, with room for source fetches). */
  ceiling?: number;
  /** Requests in flight for one organization (config.webhookInflightPerOrg, default 32). */
  maxPerOrg?: number;
  /** Requests in flight to one endpoint: a slow or dead receiver holds only these. */
  maxPerEndpoint?: number;
  /** In flight to an endpoint whose last attempts all failed (3 in a row), until one succeeds. */
  maxPerFailingEndpoint?: number;
  /** Deliveries held in memory (queued, in flight or waiting on a timer); the rest wait in the database. */
  maxQueued?: number;
  /**
   * Of those, how many one organization's deliveries may be (default a
   * quarter): a backlog of one organization's failing deliveries never
   * keeps another's out of memory.
   */
  maxQueuedPerOrg?: number;
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
  /**
   * How long a claim on a delivery lasts (config.webhookLeaseMs). Renewed
   * every third of it while the delivery is held; after a crash, other
   * processes take the deliveries over once it runs out.
   */
  leaseMs?: number;
  random?: () => number;
}

type JobState = "queued" | "inflight" | "recording" | "waiting" | "gone";

interface Job {
  row: DeliveryRow;
  manual: boolean;
  state: JobState;
  /** Its endpoint was deleted, or a manual re-send already delivered it: finish, record, then forget. */
  dead: boolean;
  /** This process holds the delivery's lease (automatic jobs): forgetting it releases the lease. */
  claimed: boolean;
  timer?: ReturnType<typeof setTimeout>;
  abort?: AbortController;
  waiters: Array<(outcome: AttemptOutcome | null) => void>;
}

interface Recorded {
  job: Job;
  result: AttemptResult;
  outcome: AttemptOutcome;
}

const SWEEP_MS = 30_000;

/**
 * Turns outbox rows into signed deliveries and keeps at it until each one is
 * acknowledged, abandoned or dropped.
 *
 * - Fan-out: one write transaction per batch of outbox rows (deliveries built,
 *   rows marked), woken by the actor runtime after each commit and polled.
 * - Sending: a bounded in-memory work set fed to fair per-endpoint lanes
 *   (delivery-lanes.ts), so one slow receiver never holds up the others.
 * - Recording: results are group-committed (result-recorder.ts); a delivery
 *   leaves memory only once its result is durable.
 * - Crash safety: the database is the truth. Whatever was not recorded is
 *   still `pending` and is loaded again (on start, or by another process) once
 *   its lease is released or runs out, with the same id and bytes.
 * - Several processes: a delivery is attempted only by the process holding its
 *   lease (`claimed_by`, `lease_until`). Fan-out and test events are born
 *   claimed by their builder; due deliveries are claimed when loaded; the
 *   leases of everything held in memory are renewed every third of the lease;
 *   a finished, parked or dropped delivery is released. A crashed process's
 *   leases run out and its work is claimed by the next sweep of another.
 */
export function createDispatcher(opts: DispatcherOptions) {
  const { deliveries, endpoints, deliver } = opts;
  const log = opts.logger.child({ component: "webhooks" });
  const maxPerEndpoint = opts.maxPerEndpoint ?? 16;
  const maxQueued = opts.maxQueued ?? 10_000;
  const maxQueuedPerOrg = Math.max(1, opts.maxQueuedPerOrg ?? Math.floor(maxQueued / 4));
  const fanOutBatch = opts.fanOutBatch ?? 500;
  const pollMs = opts.pollMs ?? 500;
  const parkAfterMs = opts.parkAfterMs ?? 60_000;
  const random = opts.random ?? Math.random;
  const leaseMs = opts.leaseMs ?? 30_000;
  // Swept at least once per lease, so a dead process's deliveries are taken over within about two leases.
  const sweepMs = Math.min(SWEEP_MS, leaseMs);

  const auto = new Map<string, Job>();
  const manual = new Map<string, Job>();
  const endpointById = new Map<string, SendableEndpoint>();
  const removed = new Set<string>();
  /** Automatic deliveries held in memory, per organization. */
  const heldByOrg = new Map<string, number>();
  /** Organizations at their share of memory: their due deliveries are left in the database until they are below it. */
  const fullOrgs = new Set<string>();
  /** This process instance: the `claimed_by` of the deliveries it holds. */
  let owner = `dsp_${randomToken(16)}`;
  let fanning: Promise<void> | null = null;
  let fanAgain = false;
  let loading: Promise<void> | null = null;
  let backlog = true;
  let parkedDue: number | null = null;
  let lastSweep = 0;
  let stopped = true;
  let ticker: ReturnType<typeof setInterval> | undefined;
  const counters = { sent: 0, delivered: 0, failed: 0, abandoned: 0 };
  const unreadableSecrets = new Set<string>();

  const claim = (): Claim => ({ by: owner, until: Date.now() + leaseMs });

  const lanes = createDeliveryLanes<Job>({
    maxInFlight: opts.maxInFlight ?? 192,
    ceiling: opts.ceiling ?? 224,
    maxPerOrg: opts.maxPerOrg ?? 32,
    maxPerEndpoint,
    maxPerFailingEndpoint: Math.min(maxPerEndpoint, opts.maxPerFailingEndpoint ?? 2),
    isQueued: (job) => job.state === "queued",
    start,
  });
  const recorder = createResultRecorder<Recorded>({
    deliveries,
    claim,
    log,
    lingerMs: opts.recordLingerMs ?? 2,
    stopped: () => stopped,
    settle: (b) => settle(b.job, b.result, b.outcome),
  });
  const renewer = createLeaseRenewer<Job>({
    renew: (ids) => deliveries.renew(ids, claim()),
    leaseMs,
    log,
    what: "webhook deliveries",
    held: () => [...auto.values()].filter((j) => j.claimed),
    idOf: (job) => job.row.id,
    lost: dropLost,
  });

  const tagsOf = (row: DeliveryRow) => ({ delivery_id: row.id, endpoint_id: row.endpointId, org_id: row.orgId });

  function settleWaiters(job: Job, outcome: AttemptOutcome | null) {
    const waiters = job.waiters;
    job.waiters = [];
    for (const w of waiters) w(outcome);
  }

  function mapOf(job: Job) {
    return job.manual ? manual : auto;
  }

  /** Takes a job out of memory for good (its row in the database stays as it is, its lease is given back). */
  function forget(job: Job) {
    if (job.timer) clearTimeout(job.timer);
    job.timer = undefined;
    job.state = "gone";
    if (mapOf(job).get(job.row.id) === job) {
      mapOf(job).delete(job.row.id);
      if (!job.manual) unhold(job.row.orgId);
    }
    if (job.claimed) {
      job.claimed = false;
      recorder.release(job.row.id);
    }
    settleWaiters(job, null);
  }

  function unhold(orgId: string) {
    const n = (heldByOrg.get(orgId) ?? 1) - 1;
    if (n > 0) heldByOrg.set(orgId, n);
    else heldByOrg.delete(orgId);
    // Room again (a tenth of its share, so its backlog is loaded in batches): load what it left in the database.
    if (n <= maxQueuedPerOrg - Math.ceil(maxQueuedPerOrg / 10) && fullOrgs.delete(orgId)) backlog = true;
  }

  function enqueue(job: Job, front = false) {
    if (stopped || job.dead || removed.has(job.row.endpointId) || !endpointById.has(job.row.endpointId)) return forget(job);
    job.state = "queued";
    lanes.push(job.row.endpointId, job.row.orgId, job, front);
    pump();
  }

  function pump() {
    if (!stopped) lanes.pump();
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

  /** Takes a delivery this process has just claimed into memory. */
  function admit(row: DeliveryRow, waiter?: (o: AttemptOutcome | null) => void) {
    const existing = auto.get(row.id);
    if (existing) {
      if (waiter) existing.waiters.push(waiter);
      return;
    }
    const held = heldByOrg.get(row.orgId) ?? 0;
    if (auto.size >= maxQueued || held >= maxQueuedPerOrg) {
      // Left in the database, released: loaded when there is room (for this organization).
      if (held >= maxQueuedPerOrg) fullOrgs.add(row.orgId);
      else backlog = true;
      recorder.release(row.id);
      waiter?.(null);
      return;
    }
    const job: Job = { row: { ...row }, manual: false, state: "queued", dead: false, claimed: true, waiters: waiter ? [waiter] : [] };
    auto.set(row.id, job);
    heldByOrg.set(row.orgId, held + 1);
    if (held + 1 >= maxQueuedPerOrg) fullOrgs.add(row.orgId);
    waitOrPark(job, row.nextAttemptAt ?? 0);
  }

  function start(job: Job, lane: Lane<Job>) {
    const endpoint = endpointById.get(job.row.endpointId);
    if (!endpoint) return forget(job);
    job.state = "inflight";
    job.abort = new AbortController();
    lanes.begin(lane);
    counters.sent++;
    const attempt =
      endpoint.secret === null ? unsignable(endpoint) : deliver({ url: endpoint.url, secret: endpoint.secret, event: job.row.event, deliveryId: job.row.id, body: job.row.body }, job.abort.signal);
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
    return delay === null ? { kind: "abandoned" } : { kind: "retry", at: Date.now() + delay, hold: delay <= parkAfterMs };
  }

  function finish(job: Job, lane: Lane<Job>, outcome: AttemptOutcome) {
    lanes.end(lane, outcome.aborted ? null : outcome.ok);
    job.abort = undefined;
    if (outcome.aborted) {
      // Cut by shutdown: not an attempt. Still pending in the database, sent again after restart.
      forget(job);
    } else {
      const verdict = verdictOf(job, outcome);
      if (outcome.ok) counters.delivered++;
      else counters.failed++;
      const { startedAt, durationMs, statusCode, error } = outcome;
      job.state = "recording";
      recorder.record({ job, outcome, result: { deliveryId: job.row.id, manual: job.manual, startedAt, durationMs, statusCode, error, verdict } });
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
    if (verdict.kind !== "retry") job.claimed = false; // finished: the recording let go of the lease
    if (verdict.kind !== "retry" || job.dead || stopped || removed.has(job.row.endpointId)) return forget(job);
    job.row.attempts++;
    job.row.nextAttemptAt = verdict.at;
    job.claimed = verdict.hold; // a parked retry was released by the recording
    waitOrPark(job, verdict.at);
  }

  async function fanOutLoop(): Promise<void> {
    do {
      fanAgain = false;
      const { deliveries: built, endpoints: active, events } = await deliveries.fanOut(fanOutBatch, claim());
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
    // What this process holds is leased, so it is not found again; what another holds is not found at all.
    // An organization at its share is skipped: its backlog cannot crowd the others out of memory.
    const { rows, more } = await deliveries.claimDue(now, room, claim(), {
      skipOrgs: [...fullOrgs],
      roomFor: (orgId) => maxQueuedPerOrg - (heldByOrg.get(orgId) ?? 0),
    });
    backlog = more;
    if (rows.length > 0) {
      await ensureEndpoints(rows.map((r) => r.endpointId));
      for (const row of rows) admit(row); // when stopped (or the endpoint is gone) it is released at once
    }
    parkedDue = await deliveries.nextDueAfter(now);
    lastSweep = now;
  }

  /**
   * Loads (claims) pending deliveries that are due and held by nobody: after a
   * restart, a backlog, a parked retry, or another process's crash.
   */
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
    if (backlog || (parkedDue !== null && parkedDue <= now) || now - lastSweep >= sweepMs) void loadDue();
  }

  /** Drops what another process took over or finished, unless it is under way here. */
  function dropLost(jobs: Job[]): number {
    let lost = 0;
    for (const job of jobs) {
      if (!job.claimed || (job.state !== "queued" && job.state !== "waiting")) continue;
      job.claimed = false;
      forget(job);
      lost++;
    }
    return lost;
  }

  return {
    async start(): Promise<void> {
      if (!stopped) return;
      stopped = false;
      owner = `dsp_${randomToken(16)}`;
      ticker = setInterval(tick, pollMs);
      ticker.unref?.();
      renewer.start();
      await loadDue();
      wake();
    },

    /**
     * Stops taking work, lets attempts in flight finish for up to
     * `stopGraceMs`, cuts the rest (they stay pending and are re-sent after a
     * restart or by another process, same id and bytes), records every result
     * it has and releases the leases of what it did not finish.
     */
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (ticker) clearInterval(ticker);
      renewer.stop();
      for (const job of [...auto.values(), ...manual.values()]) if (job.state === "waiting" || job.state === "queued") forget(job);
      await fanning;
      await loading;
      await renewer.settled();
      const deadline = Date.now() + (opts.stopGraceMs ?? 5000);
      while (lanes.inflight > 0 && Date.now() < deadline) await Bun.sleep(10);
      for (const job of [...auto.values(), ...manual.values()]) job.abort?.abort();
      const cutDeadline = Date.now() + 1000;
      while (lanes.inflight > 0 && Date.now() < cutDeadline) await Bun.sleep(5);
      await recorder.drain();
      for (const job of [...auto.values(), ...manual.values()]) forget(job);
      await recorder.flush(); // the leases of what was just forgotten
      lanes.clear();
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
        // A manual re-send ignores leases: one attempt now, whoever holds the delivery.
        const job: Job = { row: { ...row }, manual: true, state: "queued", dead: false, claimed: false, waiters: [resolve] };
        manual.set(row.id, job);
        enqueue(job, true);
      });
    },

    /** Creates a delivery of `event` with `data` for one endpoint and sends it through the usual path. */
    async sendOne(endpointId: string, event: string, data: Record<string, unknown>, opts: { test: boolean }): Promise<{ row: DeliveryRow; outcome: Promise<AttemptOutcome | null> } | null> {
      await ensureEndpoints([endpointId]);
      const endpoint = endpointById.get(endpointId);
      if (!endpoint) return null;
      const row = await deliveries.insertOne(endpoint, event, data, { ...opts, claim: stopped ? null : claim() });
      const outcome = new Promise<AttemptOutcome | null>((resolve) => {
        if (!stopped) return admit(row, resolve);
        if (row.claimedBy !== null) recorder.release(row.id);
        resolve(null);
      });
      return { row, outcome };
    },

    stats() {
      return { ...counters, inflight: lanes.inflight, inMemory: auto.size + manual.size, pendingResults: recorder.pending };
    },

    /** In flight and held in memory for one organization. */
    orgStats(orgId: string) {
      return { inflight: lanes.inflightOf(orgId), held: heldByOrg.get(orgId) ?? 0 };
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
