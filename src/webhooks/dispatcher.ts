import { randomToken } from "../ids.ts";
import type { Logger } from "../log.ts";
import type { AttemptOutcome, Deliver } from "./deliver.ts";
import { createDeliveryAdmission } from "./delivery-admission.ts";
import { createAttempter } from "./delivery-attempt.ts";
import { createDeliveryIntake } from "./delivery-intake.ts";
import { createDeliveryLanes, type Lane } from "./delivery-lanes.ts";
import type { AttemptResult, AttemptVerdict, Claim, DeliveryRow, DeliveryStore } from "./delivery-store.ts";
import { createWorkSet, type Job } from "./delivery-work-set.ts";
import { createEndpointCache } from "./endpoint-cache.ts";
import type { EndpointStore } from "./endpoint-store.ts";
import { createLeaseRenewer } from "../work/lease-renewer.ts";
import { createResultRecorder } from "./result-recorder.ts";
import { nextRetryDelayMs } from "./retry-policy.ts";

export interface DispatcherOptions {
  /** Each real attempt's outcome (src/ops metrics); attempts cut by a shutdown are not reported. */
  onAttempt?: (outcome: "success" | "failure" | "timeout") => void;
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
 *   rows marked), woken by the actor runtime after each commit and polled
 *   (delivery-intake.ts).
 * - Sending: a bounded in-memory work set (delivery-work-set.ts, bounded by
 *   delivery-admission.ts) fed to fair per-endpoint lanes (delivery-lanes.ts),
 *   so one slow receiver never holds up the others.
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
  const { deliveries, deliver } = opts;
  const log = opts.logger.child({ component: "webhooks" });
  const maxPerEndpoint = opts.maxPerEndpoint ?? 16;
  const maxQueued = opts.maxQueued ?? 10_000;
  const random = opts.random ?? Math.random;
  const leaseMs = opts.leaseMs ?? 30_000;

  const endpoints = createEndpointCache(opts.endpoints);
  /** This process instance: the `claimed_by` of the deliveries it holds. */
  let owner = `dsp_${randomToken(16)}`;
  let stopped = true;
  const counters = { sent: 0, delivered: 0, failed: 0, abandoned: 0 };

  const claim = (): Claim => ({ by: owner, until: Date.now() + leaseMs });

  const admission = createDeliveryAdmission({
    maxHeld: maxQueued,
    maxHeldPerOrg: opts.maxQueuedPerOrg ?? Math.floor(maxQueued / 4),
    parkAfterMs: opts.parkAfterMs ?? 60_000,
    // Swept at least once per lease, so a dead process's deliveries are taken over within about two leases.
    sweepMs: Math.min(SWEEP_MS, leaseMs),
  });
  // The closures below are called only once the dispatcher runs, when every part exists.
  const work = createWorkSet({ admission, release: (id) => recorder.release(id), enqueue: (job) => enqueue(job) });
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
    held: () => work.claimed(),
    idOf: (job) => job.row.id,
    lost: (jobs) => work.dropLost(jobs),
  });
  const intake = createDeliveryIntake({
    deliveries,
    endpoints,
    admission,
    claim,
    admit: (row) => work.admit(row),
    stopped: () => stopped,
    log,
    fanOutBatch: opts.fanOutBatch ?? 500,
    pollMs: opts.pollMs ?? 500,
  });
  const attempt = createAttempter({ deliver, log });

  const tagsOf = (row: DeliveryRow) => ({ delivery_id: row.id, endpoint_id: row.endpointId, org_id: row.orgId });

  function enqueue(job: Job, front = false) {
    if (stopped || job.dead || endpoints.isRemoved(job.row.endpointId) || !endpoints.has(job.row.endpointId)) return work.forget(job);
    job.state = "queued";
    lanes.push(job.row.endpointId, job.row.orgId, job, front);
    pump();
  }

  function pump() {
    if (!stopped) lanes.pump();
  }

  function start(job: Job, lane: Lane<Job>) {
    const endpoint = endpoints.get(job.row.endpointId);
    if (!endpoint) return work.forget(job);
    job.state = "inflight";
    job.abort = new AbortController();
    lanes.begin(lane);
    counters.sent++;
    attempt(job.row, endpoint, job.abort.signal)
      .then((outcome) => finish(job, lane, outcome))
      .catch((err) => log.error("Cannot finish a webhook attempt", { err, ...tagsOf(job.row) }));
  }

  function verdictOf(job: Job, outcome: AttemptOutcome): AttemptVerdict {
    if (outcome.ok) return { kind: "delivered" };
    if (job.manual) return { kind: "unchanged" };
    const delay = nextRetryDelayMs(opts.retrySchedule, job.row.attempts + 1, random);
    return delay === null ? { kind: "abandoned" } : { kind: "retry", at: Date.now() + delay, hold: !admission.parks(delay) };
  }

  function finish(job: Job, lane: Lane<Job>, outcome: AttemptOutcome) {
    lanes.end(lane, outcome.aborted ? null : outcome.ok);
    job.abort = undefined;
    if (outcome.aborted) {
      // Cut by shutdown: not an attempt. Still pending in the database, sent again after restart.
      work.forget(job);
    } else {
      const verdict = verdictOf(job, outcome);
      if (outcome.ok) counters.delivered++;
      else counters.failed++;
      opts.onAttempt?.(outcome.ok ? "success" : outcome.timedOut ? "timeout" : "failure");
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
      // Warn: a receiver that fails is the operator's (or the customer's) to fix. Never the body or the signing secret.
      log.warn("Webhook attempt failed", {
        ...tags,
        status_code: result.statusCode,
        error: result.error,
        manual: job.manual,
        ...(verdict.kind === "retry" ? { retry_at: new Date(verdict.at).toISOString() } : {}),
      });
    }
    work.settleWaiters(job, outcome);
    if (job.manual) {
      if (verdict.kind === "delivered") {
        const twin = work.automatic(job.row.id);
        if (twin) {
          twin.dead = true;
          if (twin.state === "queued" || twin.state === "waiting") work.forget(twin);
        }
      }
      return work.forget(job);
    }
    if (verdict.kind !== "retry") job.claimed = false; // finished: the recording let go of the lease
    if (verdict.kind !== "retry" || job.dead || stopped || endpoints.isRemoved(job.row.endpointId)) return work.forget(job);
    job.row.attempts++;
    job.row.nextAttemptAt = verdict.at;
    job.claimed = verdict.hold; // a parked retry was released by the recording
    work.waitOrPark(job, verdict.at);
  }

  return {
    async start(): Promise<void> {
      if (!stopped) return;
      stopped = false;
      owner = `dsp_${randomToken(16)}`;
      intake.startPolling();
      renewer.start();
      await intake.loadDue();
      intake.wake();
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
      intake.stopPolling();
      renewer.stop();
      for (const job of work.all()) if (job.state === "waiting" || job.state === "queued") work.forget(job);
      await intake.settled();
      await renewer.settled();
      const deadline = Date.now() + (opts.stopGraceMs ?? 5000);
      while (lanes.inflight > 0 && Date.now() < deadline) await Bun.sleep(10);
      for (const job of work.all()) job.abort?.abort();
      const cutDeadline = Date.now() + 1000;
      while (lanes.inflight > 0 && Date.now() < cutDeadline) await Bun.sleep(5);
      await recorder.drain();
      for (const job of work.all()) work.forget(job);
      await recorder.flush(); // the leases of what was just forgotten
      lanes.clear();
    },

    wake: intake.wake,

    /** The endpoint was deleted: nothing more is sent to it, armed retry timers included. */
    forgetEndpoint(endpointId: string): void {
      endpoints.remove(endpointId);
      for (const job of work.all()) {
        if (job.row.endpointId !== endpointId) continue;
        job.dead = true;
        if (job.state === "queued" || job.state === "waiting") work.forget(job);
      }
    },

    /**
     * One immediate attempt of an existing delivery, same id and bytes, outside
     * the retry schedule. Resolves with its outcome, or null if it was not made.
     */
    async resend(row: DeliveryRow): Promise<AttemptOutcome | null> {
      if (stopped) return null;
      await endpoints.ensure([row.endpointId]);
      if (!endpoints.has(row.endpointId)) return null;
      return new Promise((resolve) => {
        const job = work.resend(row, resolve);
        if (job) enqueue(job, true);
      });
    },

    /** Creates a delivery of `event` with `data` for one endpoint and sends it through the usual path. */
    async sendOne(endpointId: string, event: string, data: Record<string, unknown>, opts: { test: boolean }): Promise<{ row: DeliveryRow; outcome: Promise<AttemptOutcome | null> } | null> {
      await endpoints.ensure([endpointId]);
      const endpoint = endpoints.get(endpointId);
      if (!endpoint) return null;
      const row = await deliveries.insertOne(endpoint, event, data, { ...opts, claim: stopped ? null : claim() });
      const outcome = new Promise<AttemptOutcome | null>((resolve) => {
        if (!stopped) return work.admit(row, resolve);
        if (row.claimedBy !== null) recorder.release(row.id);
        resolve(null);
      });
      return { row, outcome };
    },

    stats() {
      return { ...counters, inflight: lanes.inflight, inMemory: work.size, pendingResults: recorder.pending };
    },

    /** In flight and held in memory for one organization. */
    orgStats(orgId: string) {
      return { inflight: lanes.inflightOf(orgId), held: admission.heldOf(orgId) };
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
