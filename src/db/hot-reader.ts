import type { Client } from "@libsql/client";
import LibsqlDatabase from "libsql";
import type { ChangeFeed } from "./change-feed.ts";

/**
 * The hot-path reader of a database (its own file so read-cache.ts, which wraps it, and
 * create-database.ts, which makes both, do not import each other).
 */
export interface HotReader {
  /** First row as an array of column values, or undefined. */
  get(sql: string, args: unknown[]): Promise<unknown[] | undefined>;
  /** Every row, each as an array of column values (the read paths of the API: actors, webhook endpoints). */
  all(sql: string, args: unknown[]): Promise<unknown[][]>;
  /**
   * `PRAGMA data_version` of the hot connection on a `file:` database: it changes whenever
   * any other connection (this process's writer, another process) commits, so a result read
   * while it held a value is still the database's answer while it holds it (read-cache.ts).
   * On a server, the polled change feed (change-feed.ts): a commit elsewhere is seen within
   * 750 ms, this process's own at once; null while the server has not answered a poll lately.
   * Null for `:memory:`: nothing is cached there.
   */
  version(): number | null;
  /** True when reads are round trips to a server (no local connection). */
  readonly remote: boolean;
  close(): void;
}

/**
 * A commit counter read from the WAL-index header in the database's `-shm`
 * file (https://www.sqlite.org/walformat.html, 2.2.1: the 48-byte header every
 * connection of every process reads to begin a read transaction; SQLite
 * rewrites it at each commit: `iChange`, `mxFrame`, the salts, the checksum).
 * Comparing it costs nanoseconds; `PRAGMA data_version` costs a read
 * transaction (~4-6 µs of shared-memory locking through libSQL), which was
 * 40% of an authenticated GET. Answers a number that changes whenever the
 * header did: a torn read (a commit in progress) only changes it once more.
 * The file stays while this connection is open (SQLite removes `-shm` only
 * when no connection is left), so the mapping cannot go stale while it is;
 * once it is closed, the next connection to open the database alone truncates
 * the file and a read of the mapping would be SIGBUS, so the reader never
 * touches it after `close()`. Null when the
 * file is not there (no WAL): the PRAGMA is used instead.
 */
function walIndexWatcher(path: string): (() => number) | null {
  let words: Int32Array;
  try {
    const map = Bun.mmap(`${path}-shm`, { shared: true });
    if (map.byteLength < 48) return null;
    words = new Int32Array(map.buffer, map.byteOffset, 12);
  } catch {
    return null;
  }
  const seen = new Int32Array(12);
  let generation = 0;
  return () => {
    let changed = false;
    for (let i = 0; i < 12; i++) {
      const w = words[i]!;
      if (w !== seen[i]) {
        seen[i] = w;
        changed = true;
      }
    }
    if (changed) generation++;
    return generation;
  };
}

export function createHotReader(url: string, client: Client, feed: ChangeFeed | null): HotReader {
  const path = url.startsWith("file:") ? url.slice("file:".length) : null;
  if (!path || path === ":memory:" || path.includes("mode=memory")) {
    return {
      remote: !path,
      async get(sql, args) {
        const res = await client.execute({ sql, args: args as never });
        return res.rows[0] ? Array.from(res.rows[0]) : undefined;
      },
      async all(sql, args) {
        const res = await client.execute({ sql, args: args as never });
        return res.rows.map((r) => Array.from(r));
      },
      version: () => feed?.version() ?? null,
      close() {
        feed?.close();
      },
    };
  }
  const conn = new LibsqlDatabase(path, { readonly: true });
  let watch: (() => number) | null | undefined;
  let closed = false;
  const statements = new Map<string, ReturnType<typeof conn.prepare>>();
  // Each call runs to completion and resets its statement (get/all), so no read transaction outlives a call:
  // every read sees the last commit of the writer (WAL), whichever connection made it.
  const prepared = (sql: string) => {
    let st = statements.get(sql);
    if (!st) {
      st = conn.prepare(sql);
      st.raw(true);
      statements.set(sql, st);
    }
    return st;
  };
  return {
    remote: false,
    async get(sql, args) {
      return (prepared(sql).get as (...a: unknown[]) => unknown)(...args) as unknown[] | undefined;
    },
    async all(sql, args) {
      return (prepared(sql).all as (...a: unknown[]) => unknown)(...args) as unknown[][];
    },
    version() {
      if (closed) throw new Error("Cannot read: database is closed");
      if (watch === undefined) {
        // The shared memory exists once the connection has read: map it after a first read.
        (prepared("SELECT 1 FROM sqlite_master LIMIT 1").get as () => unknown)();
        watch = walIndexWatcher(path) ?? null;
      }
      if (watch) return watch();
      return (prepared("PRAGMA data_version").get as () => unknown[])()[0] as number;
    },
    close() {
      closed = true;
      watch = null;
      statements.clear();
      conn.close();
    },
  };
}
