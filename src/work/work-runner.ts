import type { Logger } from "../log.ts";
import { createLeaseRenewer } from "./lease-renewer.ts";
import { setLongTimeout } from "./long-timeout.ts";
import type { WorkLedger, WorkRow } from "./work-ledger.ts";
import type { WorkPolicy } from "./work-policies.ts";
import type { WorkRequest, WorkType } from "./work-types.ts";

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

/** What a finished run asks for next: nothing (done), its next stage on the same row, or to run later without spending an attempt. */
export type WorkResult = void | { next: WorkRequest } | { defer: number };

export interface WorkHandler<T extends WorkType> {
  run(work: WorkRow<T>, ctx: WorkContext): Promise<WorkResult>;
  /** Called once when the work fails for good (permanent error or attempts exhausted). */
  onFailed?(work: WorkRow<T>, err: unknown): Promise<void>;
}

/** One handler per work type: the registry the runner runs. A type without a handler does not compile. */
export type WorkHandlers = { [T in WorkType]: WorkHandler<T> };
export type WorkPolicies = { [T in WorkType]: WorkPolicy };

const errorText = (err: unknown) => String((err as Error)?.message ?? err);

/** How a run ended here: finished, handed to its next stage, deferred, to be retried, failed for good, cancelled, or its lease lost. */
export type WorkOutcome = "done" | "next" | "deferred" | "retry" | "failed" | "cancelled" | "lost";

/**
 * Claims due work of every type up to its policy's concurrency, keeps the
 * leases of what runs here alive (one batched renewal for all of it), aborts
 * a run whose lease was taken away (cancelled by a DELETE, reclaimed after a
 * stall) or that outlived its timeout, and applies the type's retry policy.
 * It sleeps until the next row falls due, or until `wake()` (work enqueued here).
 */
export function createWorkRunner(opts: {
  ledger: WorkLedger;
  policies: WorkPolicies;
  handlers: WorkHandlers;
  logger: Logger;
  pollMs?: number;
  /** Each run's outcome and duration (metrics); not called for runs cut short by a shutdown. */
  onFinished?: (type: WorkType, outcome: WorkOutcome, seconds: number) => void;
}) {
  const { ledger, policies, handlers, logger } = opts;
  const pollMs = opts.pollMs ?? 1000;
  const types = Object.keys(handlers) as WorkType[];
  const running = new Map<string, { row: WorkRow; abort: AbortController }>();
  const inFlight = new Map<WorkType, number>();
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

  async function execute<T extends WorkType>(type: T, row: WorkRow<T>) {
    const policy = policies[type];
    const handler = handlers[type] as WorkHandler<T>;
    const abort = new AbortController();
    running.set(row.id, { row, abort });
    const log = logger.child({ work_id: row.id, work_type: type, entity_id: row.entityId, org_id: row.orgId, attempt: row.attempts });
    // A long timeout (TRANSCODE_TIMEOUT_MS is the operator's) may pass setTimeout's 32-bit limit: it would fire at once.
    const clearRunTimeout = setLongTimeout(() => abort.abort(new Error(`The work ran longer than ${policy.timeoutMs} ms.`)), policy.timeoutMs);
    const t0 = performance.now();
    const ended = (outcome: WorkOutcome) => opts.onFinished?.(type, outcome, (performance.now() - t0) / 1000);
    try {
      log.debug("Work started", {});
      const result = await handler.run(row, { signal: abort.signal, logger: log });
      if (stopped) return; // the lease lapses and another run resumes it
      if (result && "next" in result) {
        if (await ledger.advance(row.id, result.next, policies[result.next.type].maxAttempts)) {
          log.info("Work stage done", { next_type: result.next.type });
          ended("next");
        } else {
          log.warn("Work lease lost before its next stage; left to its new holder", {});
          ended("lost");
        }
        return;
      }
      if (result && "defer" in result) {
        await ledger.defer(row.id, result.defer);
        ended("deferred");
        return;
      }
      if (!(await ledger.finish(row.id))) {
        log.warn("Work finished after its lease was lost", {});
        ended("lost");
      } else {
        log.debug("Work done", {});
        ended("done");
      }
    } catch (err) {
      if (stopped) return;
      const reason = abort.signal.reason;
      if (reason instanceof PermanentWorkError && reason.code === "CANCELLED") {
        log.info("Work cancelled", {});
        ended("cancelled");
        return;
      }
      const permanent = err instanceof PermanentWorkError || reason instanceof PermanentWorkError;
      if (!permanent && row.attempts < row.maxAttempts) {
        const delay = policy.backoffMs(row.attempts);
        log.warn("Work failed; will retry", { err, retry_in_ms: delay });
        await ledger.retry(row.id, delay, errorText(err));
        ended("retry");
        return;
      }
      log.error("Work failed for good", { err });
      ended("failed");
      if (await ledger.fail(row.id, errorText(err))) await handler.onFailed?.(row, err);
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
