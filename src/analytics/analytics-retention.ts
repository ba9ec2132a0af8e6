import { and, inArray, lt, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { analyticsEventBatches, analyticsRollups, analyticsViews, analyticsWhepSamples } from "../db/schema/index.ts";
import type { RetentionRule, RetentionTarget } from "../retention/retention-rules.ts";

const DAY_MS = 86_400_000;
/** Raw beacon events and WHEP samples (issue 28: raw events 7 days). */
export const RAW_RETENTION_MS = 7 * DAY_MS;
/** Per-view figures and rollups (issue 28: 13 months; 396 days covers any 13 calendar months). */
export const ROLLUP_RETENTION_MS = 396 * DAY_MS;

/** A rule over one analytics table: rows whose `column` (indexed) is older than the period, deleted by rowid. */
function byAge(table: RetentionTarget, target: SQLiteTable, column: SQLiteColumn, periodMs: number, extra?: ReturnType<typeof sql>): RetentionRule {
  const rowid = sql<number>`rowid`;
  const old = (cutoff: number) => (extra ? and(lt(column, cutoff), extra) : lt(column, cutoff));
  return {
    table,
    cutoff: (now) => now - periodMs,
    candidates: (q, cutoff, limit) => q.select({ key: rowid }).from(target).where(old(cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [{ table, statement: q.delete(target).where(and(inArray(rowid, keys.map(Number)), old(cutoff))) }],
  };
}

/** Raw events 7 days (by arrival), WHEP samples 7 days, closed views and rollups 13 months. */
export function analyticsRetentionRules(): RetentionRule[] {
  return [
    byAge("analytics_event_batches", analyticsEventBatches, analyticsEventBatches.receivedAt, RAW_RETENTION_MS),
    byAge("analytics_whep_samples", analyticsWhepSamples, analyticsWhepSamples.at, RAW_RETENTION_MS),
    byAge("analytics_views", analyticsViews, analyticsViews.closedAt, ROLLUP_RETENTION_MS),
    byAge("analytics_rollups", analyticsRollups, analyticsRollups.bucket, ROLLUP_RETENTION_MS, sql`${analyticsRollups.granularity} IN ('minute', 'day')`),
  ];
}
