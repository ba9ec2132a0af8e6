import type { Config } from "../config.ts";
import type { Tx } from "../db/create-database.ts";
import type { WorkQueue } from "../work/work-ledger.ts";
import type { WorkHandler, WorkHandlers, WorkResult } from "../work/work-runner.ts";
import type { RetentionWork } from "./retention-work.ts";
import type { Retention } from "./retention.ts";

/** The key of the one open `retention` row, shared by every process on the database. */
export const RETENTION_KEY = "retention";

/**
 * The `retention` work: one sweep, then the same row goes back to the queue
 * for RETENTION_INTERVAL_MS (a defer spends no attempt), so it runs forever
 * without a timer of its own and, across processes, in one place at a time.
 * A sweep that fails is logged and deferred like any other: retention must
 * not stop for good because one pass met a locked file or a full disk.
 */
export function createRetentionHandler(deps: { retention: Retention; config: Pick<Config, "retentionIntervalMs"> }): WorkHandler<RetentionWork, "retention"> {
  return {
    async run(_row, ctx): Promise<WorkResult> {
      try {
        await deps.retention.sweep(Date.now(), { signal: ctx.signal });
      } catch (err) {
        // Aborted (lease lost, timeout, shutdown): the runner decides what follows.
        if (ctx.signal.aborted) throw err;
        ctx.logger.error("Retention sweep failed; next one in the usual interval", { err });
      }
      return { defer: deps.config.retentionIntervalMs };
    },
  };
}

/**
 * Enqueues the sweep in the caller's transaction (at start-up). The dedupe
 * key keeps one open row across processes; a queued row is brought forward
 * to now, so a start sweeps at once.
 */
/** The retention module's handlers (its declaration: retention-work.ts). */
export function retentionHandlers(deps: Parameters<typeof createRetentionHandler>[0]): WorkHandlers<RetentionWork> {
  return { retention: createRetentionHandler(deps) };
}

export async function scheduleRetention(tx: Tx, ledger: WorkQueue<RetentionWork>): Promise<string> {
  return ledger.enqueue(tx, { type: "retention", payload: {}, orgId: "", entityId: RETENTION_KEY, dedupeKey: RETENTION_KEY });
}
