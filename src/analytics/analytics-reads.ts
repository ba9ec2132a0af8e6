import type { Database } from "../db/create-database.ts";
import { BUCKET_MS, type AnalyticsRange } from "./analytics-query.ts";
import { rebufferRatio } from "./view-figures.ts";

/** Entries per `by` dimension and in the overview's top lists. */
const TOP = 10;
/** Concurrent viewers are counted at instants this far apart, per granularity. */
const CONCURRENCY_STEP_MS = { minute: 10_000, hour: 60_000, day: 600_000 } as const;
/** A view is watching "now" if a beacon came within this; WHEP samples are this fresh. */
const NOW_WINDOW_MS = 30_000;
const SAMPLE_MS = 10_000;

export interface SeriesPoint {
  at: string;
  views: number;
  watch_time_seconds: number;
  startup_time_ms_avg: number | null;
  rebuffer_ratio: number;
  errors: number;
}

export interface Breakdown {
  value: string;
  views: number;
  watch_time_seconds: number;
}

export interface AssetAnalytics {
  from: string;
  to: string;
  granularity: AnalyticsRange["granularity"];
  views: number;
  unique_viewers: number;
  watch_time_seconds: number;
  startup_time_ms: { p50: number | null; p95: number | null };
  rebuffer_ratio: number;
  stall_count: number;
  stalled_seconds: number;
  error_rate: number;
  exits_before_start: number;
  series: SeriesPoint[];
  by: { country: Breakdown[]; browser: Breakdown[]; os: Breakdown[]; device_type: Breakdown[]; rendition: Breakdown[] };
}

export interface ConcurrentViewers {
  current: number;
  peak: number;
  peak_at: string | null;
  series: Array<{ at: string; viewers: number }>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const num = (v: unknown) => Number(v ?? 0);
const seconds = (ms: unknown) => Math.round(num(ms) / 10) / 100;

/** Nearest-rank percentile of sorted values (exact: a stored value, never an estimate). */
export function nearestRank(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * The read side (issue 28). Totals and series come from the rollups (minute
 * rows for `minute`/`hour`, day rows for `day`); unique viewers, startup
 * percentiles and the breakdowns from the closed views' stored figures; raw
 * events are never read here.
 */
export function createAnalyticsReads(database: Database, now: () => number = Date.now) {
  const q = async (sql: string, args: Array<string | number>) => (await database.client.execute({ sql, args })).rows;
  /** Distinct viewers of the closed views matching `where` (an asset's, or an organization's). */
  const uniqueViewers = async (where: string, args: Array<string | number>) => num((await q(`SELECT count(DISTINCT viewer_id) AS n FROM analytics_views WHERE ${where}`, args))[0]?.n);

  function rollupSource(range: AnalyticsRange): { granularity: "minute" | "day"; bucketExpr: string } {
    if (range.granularity === "day") return { granularity: "day", bucketExpr: "bucket" };
    if (range.granularity === "hour") return { granularity: "minute", bucketExpr: `(bucket - bucket % ${BUCKET_MS.hour})` };
    return { granularity: "minute", bucketExpr: "bucket" };
  }

  async function breakdowns(where: string, args: Array<string | number>): Promise<AssetAnalytics["by"]> {
    const by = async (col: string) =>
      (await q(`SELECT ${col} AS value, count(*) AS views, sum(watch_ms) AS watch FROM analytics_views WHERE ${where} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${TOP}`, args)).map((r) => ({
        value: String(r.value ?? "unknown"),
        views: num(r.views),
        watch_time_seconds: seconds(r.watch),
      }));
    return {
      country: await by("country"),
      browser: await by("browser"),
      os: await by("os"),
      device_type: await by("device_type"),
      rendition: await by("CASE WHEN avg_height IS NULL THEN 'unknown' ELSE avg_height || 'p' END"),
    };
  }

  async function asset(assetId: string, range: AnalyticsRange): Promise<AssetAnalytics> {
    const src = rollupSource(range);
    const rows = await q(
      `SELECT ${src.bucketExpr} AS b, sum(views) AS views, sum(watch_ms) AS watch, sum(stall_ms) AS stall, sum(stall_count) AS stalls, sum(startup_ms_sum) AS startup, sum(started_views) AS started, sum(error_views) AS errs, sum(exits_before_start) AS exits
       FROM analytics_rollups WHERE asset_id = ? AND granularity = ? AND bucket >= ? AND bucket < ? GROUP BY 1 ORDER BY 1`,
      [assetId, src.granularity, range.from, range.to],
    );
    const tot = { views: 0, watch: 0, stall: 0, stalls: 0, errs: 0, exits: 0 };
    const series: SeriesPoint[] = rows.map((r) => {
      tot.stalls += num(r.stalls);
      tot.views += num(r.views);
      tot.watch += num(r.watch);
      tot.stall += num(r.stall);
      tot.errs += num(r.errs);
      tot.exits += num(r.exits);
      return {
        at: iso(num(r.b)),
        views: num(r.views),
        watch_time_seconds: seconds(r.watch),
        startup_time_ms_avg: num(r.started) > 0 ? Math.round(num(r.startup) / num(r.started)) : null,
        rebuffer_ratio: rebufferRatio(num(r.watch), num(r.stall)),
        errors: num(r.errs),
      };
    });
    const where = "asset_id = ? AND started_at >= ? AND started_at < ? AND closed_at IS NOT NULL";
    const args = [assetId, range.from, range.to];
    const uv = await uniqueViewers(where, args);
    const startups = (await q(`SELECT startup_ms FROM analytics_views WHERE ${where} AND startup_ms IS NOT NULL ORDER BY startup_ms`, args)).map((r) => num(r.startup_ms));
    return {
      from: iso(range.from),
      to: iso(range.to),
      granularity: range.granularity,
      views: tot.views,
      unique_viewers: uv,
      watch_time_seconds: seconds(tot.watch),
      startup_time_ms: { p50: nearestRank(startups, 50), p95: nearestRank(startups, 95) },
      rebuffer_ratio: rebufferRatio(tot.watch, tot.stall),
      stall_count: tot.stalls,
      stalled_seconds: seconds(tot.stall),
      error_rate: tot.views > 0 ? tot.errs / tot.views : 0,
      exits_before_start: tot.exits,
      series,
      by: await breakdowns(where, args),
    };
  }

  /**
   * Concurrent viewers of a stream: HLS viewers are views (their first to
   * their last beacon), WHEP viewers the 10-s samples of every process's
   * sessions; counted at instants 10 s (minute), 1 min (hour) or 10 min
   * (day) apart, each bucket's value its highest count.
   */
  async function concurrency(streamId: string, range: AnalyticsRange): Promise<ConcurrentViewers> {
    const t = now();
    const views = await q(
      // A view still sending beacons (one in the last 30 s, no end yet) lasts until now.
      `SELECT started_at AS s, CASE WHEN closed_at IS NULL AND end_seen_at IS NULL AND last_seen_at >= ? THEN ? ELSE coalesce(end_seen_at, last_seen_at) END AS e
       FROM analytics_views WHERE asset_id = ? AND started_at < ? AND coalesce(end_seen_at, last_seen_at) >= ?`,
      [t - NOW_WINDOW_MS, t, streamId, range.to, range.from - NOW_WINDOW_MS],
    );
    const samples = await q(`SELECT at, sum(viewers) AS n FROM analytics_whep_samples WHERE stream_id = ? AND at >= ? AND at < ? GROUP BY at`, [streamId, range.from - SAMPLE_MS, range.to]);
    const whep = new Map<number, number>(samples.map((r) => [num(r.at), num(r.n)]));
    const step = CONCURRENCY_STEP_MS[range.granularity];
    const bucket = BUCKET_MS[range.granularity];
    const intervals = views.map((r) => [num(r.s), num(r.e)] as const);
    const starts = intervals.map((i) => i[0]).sort((a, b) => a - b);
    const ends = intervals.map((i) => i[1]).sort((a, b) => a - b);
    let si = 0;
    let ei = 0;
    const series: ConcurrentViewers["series"] = [];
    let peak = 0;
    let peakAt: number | null = null;
    for (let b = range.from; b < range.to && b <= t; b += bucket) {
      let best = 0;
      // Instants `step` apart, and now itself (the last bucket's latest count).
      const instants: number[] = [];
      for (let at = b; at < b + bucket && at <= t; at += step) instants.push(at);
      if (t >= b && t < b + bucket && instants.at(-1) !== t) instants.push(t);
      for (const at of instants) {
        while (si < starts.length && starts[si]! <= at) si++;
        while (ei < ends.length && ends[ei]! < at) ei++;
        const n = si - ei + (whep.get(Math.floor(at / SAMPLE_MS) * SAMPLE_MS) ?? 0);
        if (n > best) best = n;
        if (n > peak) {
          peak = n;
          peakAt = at;
        }
      }
      series.push({ at: iso(b), viewers: best });
    }
    const [hls] = await q(`SELECT count(*) AS n FROM analytics_views WHERE asset_id = ? AND closed_at IS NULL AND end_seen_at IS NULL AND last_seen_at >= ?`, [streamId, t - NOW_WINDOW_MS]);
    const [rtc] = await q(
      `SELECT sum(viewers) AS n FROM analytics_whep_samples s WHERE stream_id = ? AND at = (SELECT max(at) FROM analytics_whep_samples x WHERE x.stream_id = s.stream_id AND x.holder = s.holder) AND at >= ?`,
      [streamId, t - 2 * SAMPLE_MS],
    );
    return { current: num(hls?.n) + num(rtc?.n), peak, peak_at: peakAt === null ? null : iso(peakAt), series };
  }

  async function overview(orgId: string, range: AnalyticsRange) {
    const src = rollupSource(range);
    const rows = await q(
      `SELECT ${src.bucketExpr} AS b, sum(views) AS views, sum(watch_ms) AS watch, sum(stall_ms) AS stall, sum(error_views) AS errs
       FROM analytics_rollups WHERE org_id = ? AND granularity = ? AND bucket >= ? AND bucket < ? GROUP BY 1 ORDER BY 1`,
      [orgId, src.granularity, range.from, range.to],
    );
    const tot = { views: 0, watch: 0, stall: 0, errs: 0 };
    const series = rows.map((r) => {
      tot.views += num(r.views);
      tot.watch += num(r.watch);
      tot.stall += num(r.stall);
      tot.errs += num(r.errs);
      return { at: iso(num(r.b)), views: num(r.views), watch_time_seconds: seconds(r.watch), rebuffer_ratio: rebufferRatio(num(r.watch), num(r.stall)) };
    });
    const top = async (kind: string) =>
      (
        await q(
          `SELECT asset_id, sum(views) AS views, sum(watch_ms) AS watch FROM analytics_rollups WHERE org_id = ? AND granularity = ? AND bucket >= ? AND bucket < ? AND asset_kind = ? GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${TOP}`,
          [orgId, src.granularity, range.from, range.to, kind],
        )
      ).map((r) => ({ id: String(r.asset_id), views: num(r.views), watch_time_seconds: seconds(r.watch) }));
    const where = "org_id = ? AND started_at >= ? AND started_at < ? AND closed_at IS NOT NULL";
    const args = [orgId, range.from, range.to];
    const uv = await uniqueViewers(where, args);
    return {
      from: iso(range.from),
      to: iso(range.to),
      granularity: range.granularity,
      views: tot.views,
      unique_viewers: uv,
      watch_time_seconds: seconds(tot.watch),
      rebuffer_ratio: rebufferRatio(tot.watch, tot.stall),
      error_rate: tot.views > 0 ? tot.errs / tot.views : 0,
      series,
      top_videos: await top("video"),
      top_livestreams: await top("livestream"),
      by: await breakdowns(where, args),
    };
  }

  return { asset, concurrency, overview };
}

export type AnalyticsReads = ReturnType<typeof createAnalyticsReads>;
export type OrganizationAnalytics = Awaited<ReturnType<AnalyticsReads["overview"]>>;
