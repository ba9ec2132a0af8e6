import type { Logger } from "../log.ts";
import type { JobQueue, JobRow } from "./job-queue.ts";

/** A failure that retrying cannot fix (bad input, a 404 source): no further attempts. */
export class PermanentJobError extends Error {
  override name = "PermanentJobError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Backoff for transient failures of the video stages: 2 s, 4 s, 8 s … capped at a minute. */
export function exponentialBackoffMs(attempt: number): number {
  return Math.min(60_000, 2_000 * 2 ** (attempt - 1));
}

export interface JobContext {
  signal: AbortSignal;
  logger: Logger;
}

/** One handler per job type, registered in one typed place (see job-handlers in service wiring). */
/** What a finished run asks for next: nothing (the job is done), or its next stage. */
export type JobResult = void | { next: { type: string; payload: unknown } };

export interface JobHandler {
  type: string;
  /** Jobs of this type running at once in this process. */
  concurrency: number;
  /** Jobs of this type one organization may have running at once (all processes); default no cap. */
  perOrgLimit?: number;
  retryDelayMs(attempt: number): number;
  /** Returning `{ next }` hands the same job row to another type (a pipeline stage) instead of finishing it. */
  run(job: JobRow, ctx: JobContext): Promise<JobResult>;
  /** Called once when the job fails for good (permanent error or attempts exhausted). */
  onFailed(job: JobRow, err: unknown): Promise<void>;
}

/**
 * Claims jobs for each registered type up to its concurrency, keeps their
 * leases alive, and aborts a job whose lease was taken away (cancelled by a
 * DELETE, or reclaimed by another process after we stalled).
 */
export function createJobRunner(opts: { queue: JobQueue; handlers: JobHandler[]; logger: Logger; pollMs?: number }) {
  const { queue, logger } = opts;
  const pollMs = opts.pollMs ?? 1000;
  const running = new Map<string, { job: JobRow; abort: AbortController }>();
  const inFlight = new Map<string, number>();
  let stopped = true;
  let timer: ReturnType<typeof setInterval> | undefined;
  let pumping = false;
  let pumpAgain = false;

  async function execute(handler: JobHandler, job: JobRow) {
    const abort = new AbortController();
    running.set(job.id, { job, abort });
    const log = logger.child({ job_id: job.id, job_type: job.type, entity_id: job.entityId, org_id: job.orgId, attempt: job.attempts });
    const beat = setInterval(
      () => {
        queue
          .heartbeat(job.id)
          .then((mine) => {
            if (!mine && !abort.signal.aborted) {
              log.warn("Job lease lost; aborting", {});
              abort.abort(new PermanentJobError("CANCELLED", "The job was cancelled."));
            }
          })
          .catch((err) => log.error("Cannot renew job lease", { err }));
      },
      Math.max(100, Math.floor(queue.leaseMs / 3)),
    );
    try {
      log.info("Job started", {});
      const result = await handler.run(job, { signal: abort.signal, logger: log });
      if (stopped) return; // the lease will expire and another run resumes it
      if (result?.next) {
        if (await queue.advance(job.id, result.next)) log.info("Job stage done", { next_type: result.next.type });
        else log.warn("Job lease lost before its next stage; left to its new holder", {});
        return;
      }
      await queue.finish(job.id, "done");
      log.info("Job done", {});
    } catch (err) {
      if (stopped) return;
      const cancelled = abort.signal.aborted;
      const permanent = err instanceof PermanentJobError || cancelled;
      if (!permanent && job.attempts < job.maxAttempts) {
        const delay = handler.retryDelayMs(job.attempts);
        log.warn("Job failed; will retry", { err, retry_in_ms: delay });
        await queue.retry(job.id, delay, String((err as Error)?.message ?? err));
        return;
      }
      if (cancelled && (abort.signal.reason as PermanentJobError)?.code === "CANCELLED") {
        log.info("Job cancelled", {});
        return;
      }
      log.error("Job failed for good", { err });
      await queue.finish(job.id, "failed", String((err as Error)?.message ?? err));
      await handler.onFailed(job, err);
    } finally {
      clearInterval(beat);
      running.delete(job.id);
      inFlight.set(handler.type, (inFlight.get(handler.type) ?? 1) - 1);
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
        for (const handler of opts.handlers) {
          while (!stopped && (inFlight.get(handler.type) ?? 0) < handler.concurrency) {
            const job = await queue.claim(handler.type, { perOrgLimit: handler.perOrgLimit });
            if (!job) break;
            inFlight.set(handler.type, (inFlight.get(handler.type) ?? 0) + 1);
            execute(handler, job).catch((err) => logger.error("Cannot run job", { err, job_id: job.id }));
          }
        }
      } while (pumpAgain && !stopped);
    } finally {
      pumping = false;
    }
  }

  function wake() {
    pump().catch((err) => logger.error("Cannot claim jobs", { err }));
  }

  return {
    wake,
    start() {
      stopped = false;
      timer = setInterval(wake, pollMs);
      wake();
    },
    /** Stops claiming; running handlers are aborted and their leases left to expire (resumed after restart). */
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      for (const r of running.values()) r.abort.abort(new Error("shutdown"));
    },
    /** Aborts the running job of an entity in this process, if any. */
    cancelEntity(entityId: string): boolean {
      let found = false;
      for (const r of running.values()) {
        if (r.job.entityId === entityId) {
          r.abort.abort(new PermanentJobError("CANCELLED", "The job was cancelled."));
          found = true;
        }
      }
      return found;
    },
    runningCount: () => running.size,
  };
}

export type JobRunner = ReturnType<typeof createJobRunner>;
