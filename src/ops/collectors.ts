import type { Database } from "../db/create-database.ts";
import type { Logger } from "../log.ts";
import type { LiveViewers } from "./live-viewers.ts";
import type { Metrics } from "./metrics.ts";
import { withTimeout } from "./with-timeout.ts";

/** A scrape must answer even when the database does not: a query slower than this leaves its gauge empty. */
const QUERY_TIMEOUT_MS = 2000;
const OPEN_WORK = ["queued", "running"] as const;
const OPEN_STREAMS = ["SCHEDULED", "READY_TO_STREAM", "LIVE"] as const;

/**
 * Gauges read at scrape time (prom-client `collect`): nothing is counted on the
 * write paths. The database ones are cluster-wide (every process on the
 * database sees the same rows); the in-memory ones are this process's.
 */
export function registerCollectors(opts: { metrics: Metrics; database: Database; logger: Logger; workTypes: readonly string[]; viewers: LiveViewers; broadcasts: () => number }): void {
  const { metrics, database, logger } = opts;

  /** One grouped query; on failure the gauge has no series (a stale depth would read as a real one). */
  async function grouped(sql: string, args: string[]): Promise<Array<[string, string, number]> | null> {
    try {
      const rs = await withTimeout(database.client.execute({ sql, args }), QUERY_TIMEOUT_MS, "metrics query");
      return rs.rows.map((r) => [String(r[0]), String(r[1] ?? ""), Number(r[2])]);
    } catch (err) {
      logger.warn("Cannot read a metric from the database", { err, query: sql.slice(0, 60) });
      return null;
    }
  }

  metrics.gauge({
    name: "vidlive_jobs",
    help: "Work rows queued or running, by work type and state (across every process on the database).",
    labelNames: ["type", "state"],
    async collect() {
      this.reset();
      const rows = await grouped(`SELECT type, status, count(*) FROM work WHERE status IN (?, ?) GROUP BY type, status`, [...OPEN_WORK]);
      if (!rows) return;
      // Every type and state gets a series, zero included: an empty queue is a value, not a missing one.
      for (const type of opts.workTypes) for (const state of OPEN_WORK) this.labels(type, state).set(0);
      for (const [type, state, n] of rows) this.labels(type, state).set(n);
    },
  });

  metrics.gauge({
    name: "vidlive_live_streams",
    help: "Live streams not ended, by status (across every process on the database).",
    labelNames: ["status"],
    async collect() {
      this.reset();
      const rows = await grouped(`SELECT status, '', count(*) FROM actors WHERE kind = 'livestream' AND deleted_at IS NULL AND status IN (?, ?, ?) GROUP BY status`, [...OPEN_STREAMS]);
      if (!rows) return;
      for (const status of OPEN_STREAMS) this.labels(status).set(0);
      for (const [status, , n] of rows) this.labels(status).set(n);
    },
  });

  metrics.gauge({
    name: "vidlive_live_broadcasts",
    help: "Broadcasts this process is ingesting (RTMP publishers held here).",
    collect() {
      this.set(opts.broadcasts());
    },
  });

  metrics.gauge({
    name: "vidlive_live_viewers",
    help: "Distinct clients (address + user agent) that fetched a live playlist from this process in the last 30 s.",
    collect() {
      this.set(opts.viewers.count().viewers);
    },
  });

  metrics.gauge({
    name: "vidlive_live_streams_watched",
    help: "Live streams with at least one viewer on this process in the last 30 s.",
    collect() {
      this.set(opts.viewers.count().streams);
    },
  });
}
