import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Viewer analytics (src/analytics, issue 28). No raw address or user agent:
 * only the country and the parsed browser, OS and device type.
 *
 * `analytics_event_batches`: raw beacon events, kept 7 days (retention), one
 * row per view per beacon body (`events`: a JSON array of
 * `[type, t, player_time, height, bitrate, code, startup_ms]`, `first_t`
 * the smallest `t`), read only when their view is closed (issue 28 item 7:
 * one row per body is ~20x cheaper to insert than one per event). `analytics_views`: one row per view (asset id +
 * the player's view id), open until `viewend`/`ended` or 60 s of silence;
 * its figures are written once, by the transaction that closes it.
 * `analytics_rollups`: per asset, per minute and per day sums of closed
 * views (reads never scan events). `analytics_whep_samples`: WHEP viewers
 * per stream and process, sampled every 10 s (concurrent viewers).
 */
export const analyticsEventBatches = sqliteTable(
  "analytics_event_batches",
  {
    seq: integer("seq").primaryKey(),
    assetId: text("asset_id").notNull(),
    viewId: text("view_id").notNull(),
    firstT: integer("first_t").notNull(),
    receivedAt: integer("received_at").notNull(),
    events: text("events").notNull(),
  },
  (t) => [index("analytics_event_batches_view").on(t.assetId, t.viewId, t.firstT, t.seq), index("analytics_event_batches_received").on(t.receivedAt)],
);

/**
 * One row per stored group commit of beacons (its random id), kept a day: a
 * write retried after an answer that never came (a libSQL server's timeout)
 * finds its id and stores nothing twice (src/analytics/beacon-store.ts).
 */
export const analyticsWrites = sqliteTable("analytics_writes", { id: text("id").primaryKey(), at: integer("at").notNull() }, (t) => [index("analytics_writes_at").on(t.at)]);

export const analyticsViews = sqliteTable(
  "analytics_views",
  {
    assetId: text("asset_id").notNull(),
    viewId: text("view_id").notNull(),
    orgId: text("org_id").notNull(),
    assetKind: text("asset_kind").notNull(),
    viewerId: text("viewer_id").notNull(),
    country: text("country").notNull(),
    browser: text("browser").notNull(),
    os: text("os").notNull(),
    deviceType: text("device_type").notNull(),
    startedAt: integer("started_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
    endSeenAt: integer("end_seen_at"),
    closedAt: integer("closed_at"),
    watchMs: integer("watch_ms"),
    startupMs: integer("startup_ms"),
    stallCount: integer("stall_count"),
    stallMs: integer("stall_ms"),
    avgBitrate: integer("avg_bitrate"),
    avgHeight: integer("avg_height"),
    errors: integer("errors"),
    exitBeforeStart: integer("exit_before_start"),
  },
  (t) => [
    primaryKey({ columns: [t.assetId, t.viewId] }),
    index("analytics_views_open").on(t.lastSeenAt).where(sql`closed_at IS NULL`),
    index("analytics_views_asset").on(t.assetId, t.startedAt),
    index("analytics_views_org").on(t.orgId, t.startedAt),
    index("analytics_views_closed").on(t.closedAt),
  ],
);

export const analyticsRollups = sqliteTable(
  "analytics_rollups",
  {
    assetId: text("asset_id").notNull(),
    granularity: text("granularity").notNull(),
    bucket: integer("bucket").notNull(),
    orgId: text("org_id").notNull(),
    assetKind: text("asset_kind").notNull(),
    views: integer("views").notNull(),
    watchMs: integer("watch_ms").notNull(),
    stallMs: integer("stall_ms").notNull(),
    stallCount: integer("stall_count").notNull(),
    startupMsSum: integer("startup_ms_sum").notNull(),
    startedViews: integer("started_views").notNull(),
    errorViews: integer("error_views").notNull(),
    exitsBeforeStart: integer("exits_before_start").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.assetId, t.granularity, t.bucket] }),
    index("analytics_rollups_org").on(t.orgId, t.granularity, t.bucket),
    index("analytics_rollups_bucket").on(t.granularity, t.bucket),
  ],
);

export const analyticsWhepSamples = sqliteTable(
  "analytics_whep_samples",
  {
    streamId: text("stream_id").notNull(),
    at: integer("at").notNull(),
    holder: text("holder").notNull(),
    viewers: integer("viewers").notNull(),
  },
  (t) => [primaryKey({ columns: [t.streamId, t.at, t.holder] }), index("analytics_whep_samples_at").on(t.at)],
);
