import { and, asc, eq, gt, isNull, lt, or, sql } from "drizzle-orm";
import type { Database, Tx } from "../db/create-database.ts";
import { analyticsEventBatches, analyticsRollups, analyticsViews } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";
import { type EventTuple, eventMerger } from "./event-batch.ts";
import { viewFolder } from "./view-figures.ts";

/** A view without any beacon for this long is closed (issue 28: 60 s without a heartbeat). */
export const VIEW_TIMEOUT_MS = 60_000;
/** After `viewend`/`ended`, late events of the same page (other processes' batches) get this long to land. */
export const END_GRACE_MS = 2_000;
/** Batch rows read per page while folding one view (each at most one 64 KB body): memory is bounded whatever the view's length. */
const BATCH_PAGE = 100;
/** Views closed per sweep. */
const VIEWS_PER_SWEEP = 200;

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

/**
 * Closes views and rolls them up. Any process may run it: a view is closed
 * by the one transaction whose `UPDATE … SET closed_at … WHERE closed_at IS
 * NULL` changes its row, and the same transaction folds its events into its
 * figures and adds them to the minute and day rollups of the minute it
 * started, so each view is counted once whichever process closes it.
 */
export function createViewCloser(deps: { database: Database; logger: Logger; now?: () => number }) {
  const now = deps.now ?? Date.now;

  async function close(tx: Tx, assetId: string, viewId: string, at: number): Promise<boolean> {
    const claimed = await tx
      .update(analyticsViews)
      .set({ closedAt: at })
      .where(and(eq(analyticsViews.assetId, assetId), eq(analyticsViews.viewId, viewId), isNull(analyticsViews.closedAt)))
      .returning({ orgId: analyticsViews.orgId, assetKind: analyticsViews.assetKind, startedAt: analyticsViews.startedAt });
    const view = claimed[0];
    if (!view) return false;
    const folder = viewFolder();
    const merger = eventMerger((events) => folder.add(events));
    let after: { firstT: number; seq: number } | null = null;
    for (;;) {
      const cond = and(
        eq(analyticsEventBatches.assetId, assetId),
        eq(analyticsEventBatches.viewId, viewId),
        after ? or(gt(analyticsEventBatches.firstT, after.firstT), and(eq(analyticsEventBatches.firstT, after.firstT), gt(analyticsEventBatches.seq, after.seq))) : undefined,
      );
      const page = await tx
        .select({ seq: analyticsEventBatches.seq, firstT: analyticsEventBatches.firstT, events: analyticsEventBatches.events })
        .from(analyticsEventBatches)
        .where(cond)
        .orderBy(asc(analyticsEventBatches.firstT), asc(analyticsEventBatches.seq))
        .limit(BATCH_PAGE);
      for (const b of page) merger.add({ seq: b.seq, firstT: b.firstT, events: JSON.parse(b.events) as EventTuple[] });
      if (page.length < BATCH_PAGE) break;
      const last = page[page.length - 1]!;
      after = { firstT: last.firstT, seq: last.seq };
    }
    merger.end();
    const f = folder.figures();
    await tx
      .update(analyticsViews)
      .set({
        watchMs: f.watchMs,
        startupMs: f.startupMs,
        stallCount: f.stallCount,
        stallMs: f.stallMs,
        avgBitrate: f.avgBitrate,
        avgHeight: f.avgHeight,
        errors: f.errors,
        exitBeforeStart: f.exitBeforeStart ? 1 : 0,
      })
      .where(and(eq(analyticsViews.assetId, assetId), eq(analyticsViews.viewId, viewId)));
    const add = {
      views: 1,
      watchMs: f.watchMs,
      stallMs: f.stallMs,
      stallCount: f.stallCount,
      startupMsSum: f.startupMs ?? 0,
      startedViews: f.startupMs === null ? 0 : 1,
      errorViews: f.errors > 0 ? 1 : 0,
      exitsBeforeStart: f.exitBeforeStart ? 1 : 0,
    };
    for (const [granularity, size] of [
      ["minute", MINUTE_MS],
      ["day", DAY_MS],
    ] as const) {
      await tx
        .insert(analyticsRollups)
        .values({ assetId, granularity, bucket: Math.floor(view.startedAt / size) * size, orgId: view.orgId, assetKind: view.assetKind, ...add })
        .onConflictDoUpdate({
          target: [analyticsRollups.assetId, analyticsRollups.granularity, analyticsRollups.bucket],
          set: {
            views: sql`${analyticsRollups.views} + excluded.views`,
            watchMs: sql`${analyticsRollups.watchMs} + excluded.watch_ms`,
            stallMs: sql`${analyticsRollups.stallMs} + excluded.stall_ms`,
            stallCount: sql`${analyticsRollups.stallCount} + excluded.stall_count`,
            startupMsSum: sql`${analyticsRollups.startupMsSum} + excluded.startup_ms_sum`,
            startedViews: sql`${analyticsRollups.startedViews} + excluded.started_views`,
            errorViews: sql`${analyticsRollups.errorViews} + excluded.error_views`,
            exitsBeforeStart: sql`${analyticsRollups.exitsBeforeStart} + excluded.exits_before_start`,
          },
        });
    }
    return true;
  }

  /** Closes the views that are due (ended and settled, or silent for 60 s); answers how many this process closed. */
  async function sweep(): Promise<number> {
    const t = now();
    const due = await deps.database.db
      .select({ assetId: analyticsViews.assetId, viewId: analyticsViews.viewId })
      .from(analyticsViews)
      .where(and(isNull(analyticsViews.closedAt), or(lt(analyticsViews.lastSeenAt, t - VIEW_TIMEOUT_MS), lt(analyticsViews.endSeenAt, t - END_GRACE_MS))))
      .limit(VIEWS_PER_SWEEP);
    let closed = 0;
    for (const v of due) {
      if (await deps.database.write((tx) => close(tx, v.assetId, v.viewId, t))) closed++;
    }
    return closed;
  }

  let timer: ReturnType<typeof setInterval> | null = null;
  let running: Promise<unknown> | null = null;
  return {
    sweep,
    start(intervalMs: number): void {
      timer ??= setInterval(() => {
        if (running) return;
        running = sweep()
          .catch((err) => deps.logger.warn("Cannot close views", { err }))
          .finally(() => {
            running = null;
          });
      }, intervalMs);
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
  };
}
