import type { InStatement } from "@libsql/client";
import { type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import type { Logger } from "../log.ts";

/** One group commit, ready to send: its random id and two JSON texts (`json_each` unpacks them). */
export interface StoreWrite {
  id: string;
  at: number;
  /** `[[asset_id, view_id, first_t, received_at, events (its JSON text)], …]` */
  batches: string;
  /** `[[asset_id, view_id, org_id, asset_kind, viewer_id, country, browser, os, device_type, started_at, last_seen_at, end_seen_at], …]` */
  views: string;
}

/** A write's id is remembered this long: far longer than any retry of it. */
const WRITE_IDS_KEPT_MS = 86_400_000;

/**
 * The statements of one group commit, run as one transaction: the batch
 * rows unless this write's id is already stored (an earlier attempt whose
 * answer was lost committed), the views opened or touched (idempotent:
 * `max`, `coalesce`), the id, and the pruning of day-old ids. `value ->> 4`
 * of a batch is its events array's JSON text (a string inside the batches'
 * JSON): stored as sent.
 */
export function storeStatements(w: StoreWrite): InStatement[] {
  return [
    {
      sql: `INSERT INTO analytics_event_batches (asset_id, view_id, first_t, received_at, events)
        SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?)
        WHERE NOT EXISTS (SELECT 1 FROM analytics_writes WHERE id = ?)`,
      args: [w.batches, w.id],
    },
    {
      // `WHERE true`: SQLite's parser needs it between INSERT … SELECT and ON CONFLICT.
      sql: `INSERT INTO analytics_views (asset_id, view_id, org_id, asset_kind, viewer_id, country, browser, os, device_type, started_at, last_seen_at, end_seen_at)
        SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 10, value ->> 11
        FROM json_each(?) WHERE true
        ON CONFLICT (asset_id, view_id) DO UPDATE SET last_seen_at = max(last_seen_at, excluded.last_seen_at), end_seen_at = coalesce(excluded.end_seen_at, end_seen_at)
        WHERE closed_at IS NULL`,
      args: [w.views],
    },
    { sql: "INSERT INTO analytics_writes (id, at) VALUES (?, ?) ON CONFLICT DO NOTHING", args: [w.id, w.at] },
    { sql: "DELETE FROM analytics_writes WHERE at < ?", args: [w.at - WRITE_IDS_KEPT_MS] },
  ];
}

/** A `?`-bound statement as drizzle SQL (for the process's own write queue). */
function drizzleSql(s: InStatement): SQL {
  const { sql: text, args } = typeof s === "string" ? { sql: s, args: [] } : s;
  const parts = text.split("?");
  const values = args as unknown[];
  return sql.join(parts.flatMap((p, i) => (i < values.length ? [sql.raw(p), sql`${values[i]}`] : [sql.raw(p)])));
}

export interface BeaconStore {
  write(w: StoreWrite): Promise<void>;
  close(): Promise<void>;
}

/**
 * Where the writer's group commits run. On a database file or a libSQL
 * server: a worker thread with its own connection (beacon-store-worker.ts),
 * so SQLite's inserts, the WAL's writes, or the server's round trip cost the
 * event loop nothing but one message (bench/beacons-cpu.ts: the event loop's
 * CPU per stored beacon halved); the worker is started again after a crash.
 * On a file it writes beside the process's write queue: both connections
 * wait for SQLite's write lock (5-s busy timeout) instead of failing, and a
 * stopped service closes the worker's connection after its last write
 * (`writer.stop` flushes first), so no lock outlives it (the SQLITE_BUSY seen
 * on a restart in one process was the queue's own connection closed inside a
 * transaction, fixed in create-database.ts). An in-memory database exists
 * only in its connection: there the process's own write queue runs them.
 */
export function createBeaconStore(deps: { database: Database; authToken?: string; timeoutMs: number; logger: Logger }): BeaconStore {
  const url = deps.database.url;
  if (url.includes(":memory:") || url.includes("mode=memory")) {
    return {
      write: (w) =>
        deps.database.write(async (tx) => {
          for (const s of storeStatements(w)) await tx.run(drizzleSql(s));
        }),
      close: async () => {},
    };
  }
  return workerStore({ url, authToken: deps.authToken, timeoutMs: deps.timeoutMs, logger: deps.logger });
}

type Reply = { id: string; ok: true } | { id: string; ok: false; error: string };

function workerStore(opts: { url: string; authToken?: string; timeoutMs: number; logger: Logger }): BeaconStore {
  let worker: Worker | null = null;
  const waiting = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();

  function failAll(err: Error): void {
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  }

  function started(): Worker {
    if (worker) return worker;
    const w = new Worker(new URL("./beacon-store-worker.ts", import.meta.url).href);
    w.onmessage = (e: MessageEvent<Reply>) => {
      const r = e.data;
      const p = waiting.get(r.id);
      waiting.delete(r.id);
      if (r.ok) p?.resolve();
      else p?.reject(new Error(r.error));
    };
    w.onerror = (e) => {
      opts.logger.error("Beacon store worker failed", { err: e.message });
      worker = null;
      w.terminate();
      failAll(new Error(`beacon store worker failed: ${e.message}`));
    };
    w.postMessage({ type: "open", url: opts.url, authToken: opts.authToken, timeoutMs: opts.timeoutMs });
    worker = w;
    return w;
  }

  return {
    write(w: StoreWrite): Promise<void> {
      return new Promise((resolve, reject) => {
        waiting.set(w.id, { resolve, reject });
        started().postMessage({ type: "write", write: w });
      });
    },
    async close(): Promise<void> {
      const w = worker;
      worker = null;
      if (!w) return;
      await new Promise<void>((resolve) => {
        w.onmessage = () => resolve();
        w.postMessage({ type: "close" });
        setTimeout(resolve, 2_000).unref();
      });
      w.terminate();
      failAll(new Error("beacon store closed"));
    },
  };
}
