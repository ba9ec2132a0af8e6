import type { Tx } from "../db/create-database.ts";
import { crashPoint } from "../faults.ts";
import { isInfrastructureFailure } from "../infrastructure-failure.ts";
import type { Logger } from "../log.ts";
import { createLeaseRenewer } from "./lease-renewer.ts";
import { setLongTimeout } from "./long-timeout.ts";
import { infraSince, type WorkLedger, type WorkRow, type WorkRowOf } from "./work-ledger.ts";
import type { WorkPolicy } from "./work-policies.ts";
import type { WorkMap, WorkRequest, WorkType } from "./work-types.ts";

/** A failure that retrying cannot fix (bad input, a 404 source): no further attempts. */
export class PermanentWorkError extends Error {
  override name = "PermanentWorkError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface WorkContext {
  /** Aborted when the lease is lost (cancelled, or taken over), at the policy's timeout, or at shutdown. */
  signal: AbortSignal;
  logger: Logger;
}

/** What a handler does once the transaction that failed its work committed (wake listeners, remove scratch files). */
export type AfterCommit = () => Promise<void> | void;

/**
 * What a finished run asks for next: nothing (done), its next stage on the same row, to run later without spending
 * an attempt, or done with a fact to report (`report` runs in the transaction that marks the row done, e.g. telling
 * the video its source is ready: the actor's machine then queues what comes next).
 */
export type WorkResult<P extends WorkMap = WorkMap> = ResultOf<WorkRequest<P>>;
type ResultOf<Next> = void | { next: Next } | { defer: number } | { report: (tx: Tx) => Promise<AfterCommit | void> };

/** The handler of type `T` of map `P` (a module's handler fits the assembled map: its payload is the same). */
export type WorkHandler<P extends WorkMap, T extends WorkType<P>> = HandlerOf<T, P[T], WorkRequest<P>>;

interface HandlerOf<T extends string, Payload, Next> {
  run(work: WorkRowOf<T, Payload>, ctx: WorkContext): Promise<ResultOf<Next>>;
  /**
   * The work failed for good (permanent error or attempts exhausted): called once, inside the transaction that
   * marks the row failed, so what it writes (the video's TRANSCODING_FAILED) commits with the failure or not at
   * all. Answers what to do after the commit.
   */
  onFailed?(tx: Tx, work: WorkRowOf<T, Payload>, err: unknown): Promise<AfterCommit | void>;
}

/** One handler per type of a payload map (a module's, or the assembled service's): a type without one does not compile. */
export type WorkHandlers<P extends WorkMap> = { [T in WorkType<P>]: WorkHandler<P, T> };

const errorText = (err: unknown) => String((err as Error)?.message ?? err);

/**
 * How a run ended here: finished, handed to its next stage, deferred, to be retried, to be retried because our
 * infrastructure failed (no attempt spent), failed for good, cancelled, or its lease lost.
 */
export type WorkOutcome = "done" | "next" | "deferred" | "retry" | "unavailable" | "failed" | "cancelled" | "lost";

/** Between retries of work that failed on our infrastructure: half the time it has been failing, 1 s to 30 s. */
export const infraBackoffMs = (failingForMs: number) => Math.min(30_000, Math.max(1_000, Math.floor(failingForMs / 2)));

/** Between two tries of writing a run's outcome while the database does not take it: 250 ms doubling to 5 s. */
const outcomeBackoffMs = (attempt: number) => Math.min(5_000, 250 * 2 ** (attempt - 1));

/**
 * Claims due work of every type up to its policy's concurrency, keeps the
 * leases of what runs here alive (one batched renewal for all of it), aborts
 * a run whose lease was taken away (cancelled by a DELETE, reclaimed after a
 * stall) or that outlived its timeout, and applies the type's retry policy.
 * It sleeps until the next row falls due, or until `wake()` (work enqueued here).
 * The policies are the ledger's registry's (each module's declaration).
 */
export function createWorkRunner<P extends WorkMap>(opts: {
  ledger: WorkLedger<P>;
  handlers: WorkHandlers<P>;
  logger: Logger;
  pollMs?: number;
  /**
   * INFRA_RETRY_WINDOW_SECONDS: work failing on our own infrastructure is retried, without spending an attempt,
   * until it has been failing this long (15 min by default); past it such a failure counts as an attempt.
   */
  infraRetryWindowMs?: number;
  /** Each run's outcome and duration (metrics); not called for runs cut short by a shutdown. */
  onFinished?: (type: string, outcome: WorkOutcome, seconds: number) => void;
}) {
  const { ledger, handlers, logger } = opts;
  const policies = ledger.registry.policies as Record<WorkType<P>, WorkPolicy>;
  const pollMs = opts.pollMs ?? 1000;
  const infraWindowMs = opts.infraRetryWindowMs ?? 15 * 60_000;
  const types = Object.keys(handlers) as WorkType<P>[];
  const running = new Map<string, { row: WorkRow<P>; abort: AbortController }>();
  const inFlight = new Map<WorkType<P>, number>();
  let stopped = true;
  let poller: ReturnType<typeof setInterval> | undefined;
  let dueTimer: ReturnType<typeof setTimeout> | undefined;
  let pumping = false;
  let pumpAgain = false;

  const renewer = createLeaseRenewer({
    renew: (ids) => ledger.renew(ids),
    leaseMs: ledger.leaseMs,
    log: logger,
    what: "work",
    held: () => [...running.values()],
    idOf: (r) => r.row.id,
    lost: (lost) => {
      for (const r of lost) r.abort.abort(new PermanentWorkError("CANCELLED", "The work was cancelled or taken over."));
      return lost.length;
    },
  });

  /**
   * Writes a run's outcome, trying again while our infrastructure refuses it (the database is away): the row stays
   * in `running`, so its lease is renewed once the database answers; a write guarded by the claim changes nothing
   * if the lease was lost meanwhile. Without this a finished transcode whose outcome met a database outage was left
   * to its lease and run again, spending an attempt.
   */
  async function commit<R>(log: Logger, what: string, write: () => Promise<R>): Promise<R> {
    const start = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (stopped || !isInfrastructureFailure(err) || Date.now() - start > infraWindowMs) throw err;
        const delay = outcomeBackoffMs(attempt);
        log.warn("Cannot record the work's outcome; trying again", { err, outcome: what, retry_in_ms: delay });
        await Bun.sleep(delay);
      }
    }
  }

  async function execute<T extends WorkType<P>>(type: T, row: WorkRow<P, T>) {
    const policy = policies[type];
    const handler = handlers[type] as WorkHandler<P, T>;
    const abort = new AbortController();
    running.set(row.id, { row, abort });
    const log = logger.child({ work_id: row.id, work_type: type, entity_id: row.entityId, org_id: row.orgId, attempt: row.attempts });
    // A long timeout (TRANSCODE_TIMEOUT_MS is the operator's) may pass setTimeout's 32-bit limit: it would fire at once.
    const clearRunTimeout = setLongTimeout(() => abort.abort(new Error(`The work ran longer than ${policy.timeoutMs} ms.`)), policy.timeoutMs);
    const t0 = performance.now();
    const ended = (outcome: WorkOutcome) => opts.onFinished?.(type, outcome, (performance.now() - t0) / 1000);
    try {
      log.debug("Work started", {});
      crashPoint(`work:after-claim:${type}`);
      const result = await handler.run(row, { signal: abort.signal, logger: log });
      if (stopped) return; // the lease lapses and another run resumes it
      crashPoint(`work:before-outcome:${type}`);
      if (result && "next" in result) {
        const next = result.next;
        if (await commit(log, "next", () => ledger.advance(row.id, next))) {
          log.info("Work stage done", { next_type: result.next.type });
          ended("next");
        } else {
          log.warn("Work lease lost before its next stage; left to its new holder", {});
          ended("lost");
        }
        return;
      }
      if (result && "defer" in result) {
        const delay = result.defer;
        await commit(log, "deferred", () => ledger.defer(row.id, delay));
        ended("deferred");
        return;
      }
      const reported: { after?: AfterCommit | void } = {};
      const report = result && "report" in result ? result.report : undefined;
      const within = report
        ? async (tx: Tx) => {
            reported.after = await report(tx);
          }
        : undefined;
      if (!(await commit(log, "done", () => ledger.finish(row.id, within)))) {
        log.warn("Work finished after its lease was lost", {});
        ended("lost");
      } else {
        log.debug("Work done", {});
        ended("done");
        await Promise.resolve(reported.after?.()).catch((e) => log.warn("What a finished work reported was committed; its follow-up did not complete", { err: e }));
      }
    } catch (err) {
      if (stopped) return;
      crashPoint(`work:before-outcome:${type}`);
      const reason = abort.signal.reason;
      if (reason instanceof PermanentWorkError && reason.code === "CANCELLED") {
        log.info("Work cancelled", {});
        ended("cancelled");
        return;
      }
      const permanent = err instanceof PermanentWorkError || reason instanceof PermanentWorkError;
      // Our database, bucket or disk failed, not the media: again later without spending an attempt, for as long as
      // the window allows (a 10 s S3 outage used to spend all three attempts in 6-9 s and fail good videos for good).
      if (!permanent && isInfrastructureFailure(err)) {
        const since = infraSince(row) ?? Date.now();
        const failingFor = Date.now() - since;
        if (failingFor < infraWindowMs) {
          const delay = infraBackoffMs(failingFor);
          log.warn("Work failed on our infrastructure; will retry without spending an attempt", { err, retry_in_ms: delay, failing_for_ms: failingFor });
          await commit(log, "unavailable", () => ledger.unavailable(row.id, delay, errorText(err), since));
          ended("unavailable");
          return;
        }
      }
      if (!permanent && row.attempts < row.maxAttempts) {
        const delay = policy.backoffMs(row.attempts);
        log.warn("Work failed; will retry", { err, retry_in_ms: delay });
        await commit(log, "retry", () => ledger.retry(row.id, delay, errorText(err)));
        ended("retry");
        return;
      }
      // The row's failure and what the handler tells (the video's TRANSCODING_FAILED) commit in one transaction.
      const within = handler.onFailed ? (tx: Tx) => handler.onFailed!(tx, row, err) : undefined;
      const out = await commit(log, "failed", () => ledger.fail(row.id, errorText(err), within));
      if (!out.failed) {
        log.warn("Work failed after its lease was lost; left to its new holder", { err });
        ended("lost");
        return;
      }
      crashPoint(`work:after-failed:${type}`);
      log.error("Work failed for good", { err });
      ended("failed");
      await Promise.resolve(out.result?.()).catch((e) => log.warn("Cleanup after a failed work did not complete", { err: e }));
    } finally {
      clearRunTimeout();
      running.delete(row.id);
      inFlight.set(type, (inFlight.get(type) ?? 1) - 1);
      if (!stopped) wake();
    }
  }

  async function pump() {
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        for (const type of types) {
          const policy = policies[type];
          while (!stopped && (inFlight.get(type) ?? 0) < policy.concurrency) {
            const row = await ledger.claim(type, { perOrgLimit: policy.perOrgLimit });
            if (!row) break;
            inFlight.set(type, (inFlight.get(type) ?? 0) + 1);
            execute(type, row).catch((err) => logger.error("Cannot run work", { err, work_id: row.id }));
          }
        }
      } while (pumpAgain && !stopped);
      await armDue();
    } finally {
      pumping = false;
    }
  }

  /** Sleeps until the next queued row is due, when that is sooner than the next poll. */
  async function armDue() {
    const at = await ledger.nextDue();
    if (at === null || stopped) return;
    const wait = at - Date.now();
    if (wait >= pollMs) return;
    if (dueTimer) clearTimeout(dueTimer);
    dueTimer = setTimeout(wake, Math.max(5, wait + 5));
  }

  function wake() {
    if (stopped) return;
    pump().catch((err) => logger.error("Cannot claim work", { err }));
  }

  return {
    wake,
    start() {
      stopped = false;
      poller = setInterval(wake, pollMs);
      renewer.start();
      wake();
    },
    /** Stops claiming; running work is aborted and handed back to the queue (resumed by the next holder). */
    async stop() {
      stopped = true;
      if (poller) clearInterval(poller);
      if (dueTimer) clearTimeout(dueTimer);
      renewer.stop();
      await renewer.settled();
      const held = [...running.values()];
      for (const r of held) r.abort.abort(new Error("shutdown"));
      // Handed back at once (no attempt spent), so the next process resumes it without waiting for the lease to lapse.
      await Promise.all(held.map((r) => ledger.defer(r.row.id, 0).catch(() => false)));
    },
    /** Aborts the running work of an entity in this process, if any. */
    cancelEntity(entityId: string): boolean {
      let found = false;
      for (const r of running.values()) {
        if (r.row.entityId === entityId) {
          r.abort.abort(new PermanentWorkError("CANCELLED", "The work was cancelled."));
          found = true;
        }
      }
      return found;
    },
    runningCount: () => running.size,
  };
}

export type WorkRunner = ReturnType<typeof createWorkRunner>;
