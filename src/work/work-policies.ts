import type { Config } from "../config.ts";
import type { WorkType } from "./work-types.ts";

/** How one type of work is run: the one place its attempts, backoff, concurrency and timeout are set. */
export interface WorkPolicy {
  /** Attempts before the work fails for good. */
  maxAttempts: number;
  /** Delay before attempt `attempt + 1` after attempt `attempt` failed. */
  backoffMs(attempt: number): number;
  /** Rows of this type one process runs at once. */
  concurrency: number;
  /** Rows of this type one organization may have running at once, across processes; no cap when absent. */
  perOrgLimit?: number;
  /** A run still going after this is aborted (and counts as a failed attempt). */
  timeoutMs: number;
}

/** 2 s, 4 s, 8 s … capped at a minute. */
export function exponentialBackoffMs(attempt: number): number {
  return Math.min(60_000, 2_000 * 2 ** (attempt - 1));
}

/** 250 ms, 500 ms, 1 s … capped at 10 s: internal steps that should be quick to recover. */
const quickBackoffMs = (attempt: number) => Math.min(10_000, 250 * 2 ** (attempt - 1));

const MINUTE = 60_000;

/** Every work type's policy. A type missing here does not compile. */
export function workPolicies(config: Config): { [T in WorkType]: WorkPolicy } {
  return {
    "fetch-source": {
      maxAttempts: 3,
      backoffMs: exponentialBackoffMs,
      concurrency: config.sourceFetchConcurrency,
      perOrgLimit: config.sourceFetchPerOrg,
      // fetchSource enforces SOURCE_TIMEOUT_MS itself; this is the backstop.
      timeoutMs: config.sourceTimeoutMs + MINUTE,
    },
    transcode: { maxAttempts: 3, backoffMs: exponentialBackoffMs, concurrency: config.transcodeWorkers, timeoutMs: config.transcodeTimeoutMs + MINUTE },
    // A broadcast's end must happen: many quick attempts, then it is logged as failed for the operator.
    "live-finalize": { maxAttempts: 20, backoffMs: quickBackoffMs, concurrency: 4, timeoutMs: 10 * MINUTE },
    "live-watch": { maxAttempts: 10, backoffMs: quickBackoffMs, concurrency: 4, timeoutMs: MINUTE },
    "live-files-remove": { maxAttempts: 5, backoffMs: exponentialBackoffMs, concurrency: 1, timeoutMs: 5 * MINUTE },
    "actor-timer": { maxAttempts: 10, backoffMs: quickBackoffMs, concurrency: 8, timeoutMs: MINUTE },
    "actor-message": { maxAttempts: 10, backoffMs: quickBackoffMs, concurrency: 8, timeoutMs: MINUTE },
    retention: { maxAttempts: 3, backoffMs: exponentialBackoffMs, concurrency: 1, timeoutMs: 30 * MINUTE },
  };
}
