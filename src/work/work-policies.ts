import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { LeaseColumns } from "./lease.ts";
import type { WorkMap, WorkType } from "./work-types.ts";

/**
 * Work that runs where a lease is held (issue 26): the row's `entity_id` is
 * the id of a lease row in `table` (lease.ts columns). While another
 * process's lease there is alive, only that process claims the row; with no
 * lease, or a lapsed one, anyone may. A broadcast's finalization runs on the
 * process that has its files, without a poller asking for it.
 */
export interface LeaseAffinity {
  table: SQLiteTable;
  columns: LeaseColumns;
}

/** How one type of work is run: its attempts, backoff, concurrency and timeout, declared by the module that owns it. */
export interface WorkPolicy {
  /** Attempts before the work fails for good (the ledger copies it onto each row it enqueues). */
  maxAttempts: number;
  /** Delay before attempt `attempt + 1` after attempt `attempt` failed. */
  backoffMs(attempt: number): number;
  /** Rows of this type one process runs at once. */
  concurrency: number;
  /** Rows of this type one organization may have running at once, across processes; no cap when absent. */
  perOrgLimit?: number;
  /** A run still going after this is aborted (and counts as a failed attempt). */
  timeoutMs: number;
  /** Claimed only by the holder of the entity's lease while it lives (LeaseAffinity). */
  affinity?: LeaseAffinity;
}

/** One policy per type of a payload map: a type without one does not compile. */
export type WorkPolicies<P extends WorkMap> = { [T in WorkType<P>]: WorkPolicy };

/** 2 s, 4 s, 8 s … capped at a minute. */
export function exponentialBackoffMs(attempt: number): number {
  return Math.min(60_000, 2_000 * 2 ** (attempt - 1));
}

/** 250 ms, 500 ms, 1 s … capped at 10 s: internal steps that should be quick to recover. */
export const quickBackoffMs = (attempt: number) => Math.min(10_000, 250 * 2 ** (attempt - 1));

export const MINUTE = 60_000;
