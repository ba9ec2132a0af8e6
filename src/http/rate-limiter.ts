import { type SQL, inArray, lt, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/create-database.ts";
import { rateLimits } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";

export interface LimitCheck {
  key: string;
  limit: number;
}

export type LimitResult = { ok: true } | { ok: false; retryAfterSeconds: number; key: string };

export type RateLimitStore = "memory" | "database";

export interface RateLimiter {
  readonly store: RateLimitStore;
  /**
   * Every check must pass; only then are all counted (a refused request
   * consumes nothing). `memory` answers synchronously (no await on the hot
   * path); `database` answers with a promise.
   */
  hit(checks: LimitCheck[]): LimitResult | Promise<LimitResult>;
  /** `memory`: reads the windows still open (a restart keeps its allowance used). */
  load(): Promise<void>;
  /** `memory`: writes the counted windows and deletes closed ones. */
  flush(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
  /** For tests: forget a key's window. */
  reset(keys: string[]): Promise<void>;
}

interface LimiterOptions {
  database: Database;
  logger: Logger;
  /**
   * `memory` (default): counted in the process, exact for one process (the
   * embedded `file:` database). `database`: every request decided by the
   * database, exact across processes (RATE_LIMIT_STORE, src/config.ts).
   */
  store?: RateLimitStore;
  /** `memory` only: the `database` store reads the database's clock. */
  now?: () => number;
  flushEveryMs?: number;
  windowMs?: number;
}

/**
 * Fixed one-minute windows that open on a key's first request, so Retry-After
 * (the time until the window closes) is exactly enough to wait.
 */
export function createRateLimiter(opts: LimiterOptions): RateLimiter {
  return opts.store === "database" ? createDatabaseLimiter(opts) : createMemoryLimiter(opts);
}

const retryAfter = (windowEnd: number, t: number) => Math.max(1, Math.ceil((windowEnd - t) / 1000));

/** Closed windows deleted per statement, so no delete holds the write lock for long. */
const DELETE_BATCH = 500;

/** Tries of one decision when the server's write lock stays taken. */
const BUSY_ATTEMPTS = 5;

/**
 * Counting is in memory on the hot path; windows are flushed to the database
 * every second and on stop, so a restart does not hand out a fresh allowance.
 * Several processes each count their own share: use `database` for those.
 */
function createMemoryLimiter(opts: LimiterOptions): RateLimiter {
  const now = opts.now ?? Date.now;
  const WINDOW_MS = opts.windowMs ?? 60_000;
  const windows = new Map<string, { start: number; count: number }>();
  const dirty = new Set<string>();
  let timer: ReturnType<typeof setInterval> | undefined;

  function current(key: string, t: number) {
    const w = windows.get(key);
    if (!w || t >= w.start + WINDOW_MS) return undefined;
    return w;
  }

  async function flush(): Promise<void> {
    if (dirty.size === 0) return;
    const keys = [...dirty];
    dirty.clear();
    const rows = keys.flatMap((key) => {
      const w = windows.get(key);
      return w ? [{ key, windowStart: w.start, count: w.count }] : [];
    });
    const cutoff = now() - WINDOW_MS;
    await opts.database.write(async (tx) => {
      if (rows.length > 0) {
        await tx
          .insert(rateLimits)
          .values(rows)
          .onConflictDoUpdate({ target: rateLimits.key, set: { windowStart: sql`excluded.window_start`, count: sql`excluded.count` } });
      }
      // Bounded: a backlog (after downtime) is left to the next flushes and to retention.
      await tx.delete(rateLimits).where(inArray(rateLimits.key, tx.select({ key: rateLimits.key }).from(rateLimits).where(lt(rateLimits.windowStart, cutoff)).limit(DELETE_BATCH)));
    });
    for (const [key, w] of windows) if (w.start < cutoff && !dirty.has(key)) windows.delete(key);
  }

  return {
    store: "memory",
    hit(checks: LimitCheck[]): LimitResult {
      const t = now();
      for (const c of checks) {
        const w = current(c.key, t);
        if (w && w.count >= c.limit) return { ok: false, key: c.key, retryAfterSeconds: retryAfter(w.start + WINDOW_MS, t) };
      }
      for (const c of checks) {
        const w = current(c.key, t);
        if (w) w.count++;
        else windows.set(c.key, { start: t, count: 1 });
        dirty.add(c.key);
      }
      return { ok: true };
    },

    async load(): Promise<void> {
      const rows = await opts.database.db.select().from(rateLimits);
      const t = now();
      for (const r of rows) if (t < r.windowStart + WINDOW_MS) windows.set(r.key, { start: r.windowStart, count: r.count });
    },

    flush,

    start(): void {
      timer = setInterval(() => {
        flush().catch((err) => opts.logger.error("Cannot flush rate limit windows", { err }));
      }, opts.flushEveryMs ?? 1000);
      timer.unref?.();
    },

    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      await flush();
    },

    async reset(keys: string[]): Promise<void> {
      for (const k of keys) windows.delete(k);
      await opts.database.write((tx) => tx.delete(rateLimits).where(inArray(rateLimits.key, keys)));
    },
  };
}

/**
 * The database's clock in epoch milliseconds: one clock for every process,
 * so a window closes at the same instant whichever process asks.
 */
const DB_NOW = sql.raw("CAST(unixepoch('subsec') * 1000 AS INTEGER)");

/** Decisions sent in one transaction at most. */
const MAX_GROUP = 128;

interface Pending {
  checks: LimitCheck[];
  resolve(r: LimitResult): void;
  reject(err: unknown): void;
}

/**
 * Every request's checks decided by the database in one write transaction,
 * one round trip to a libSQL server (a `batch` in "write" mode), so N
 * processes share one allowance exactly. Nothing is counted in memory.
 *
 * Per decision, one statement counts all its checks or none: a conditional
 * upsert that opens a window at the database's now (new key), resets a
 * closed window to 1, or adds 1 to an open one, only if none of the checks'
 * open windows is already at its limit; it returns the keys it counted. A
 * last statement reads the windows, for Retry-After of a refused decision.
 *
 * Group commit: the requests of one turn of the event loop, and those that
 * arrive while a batch is on its way, go together in one transaction (at
 * most MAX_GROUP), each still its own statement, in order. A server commits
 * one write transaction at a time (~2 ms each on this disk, seen with
 * sqld), so one decision per transaction would cap the whole cluster near
 * 500 requests/s; with groups, 3 processes passed 3,000 decisions in ~0.3 s.
 *
 * Closed windows are deleted by retention (src/retention, `rate_limits` rule,
 * batched): one row per key, reused window after window, so the table holds
 * only the keys seen since the last sweep, and no process adds a periodic
 * delete competing for the server's write lock.
 */
function createDatabaseLimiter(opts: LimiterOptions): RateLimiter {
  const WINDOW_MS = opts.windowMs ?? 60_000;
  const { database } = opts;
  const dialect = new SQLiteAsyncDialect();
  // A server takes the batch in one request; on a `file:` database a batch
  // would run on the reader pool and wait for the write queue's lock while
  // blocking the event loop (notes/stack-facts.md), so it joins the queue.
  const remote = !database.url.startsWith("file:");
  const queue: Pending[] = [];
  let sending = false;

  function countStatement(checks: LimitCheck[]): SQL {
    const values = sql.join(
      checks.map((c) => sql`(${c.key}, ${c.limit})`),
      sql`, `,
    );
    return sql`WITH c(key, lim) AS (VALUES ${values}), t(now) AS (SELECT ${DB_NOW})
INSERT INTO rate_limits (key, window_start, count)
SELECT c.key, t.now, 1 FROM c, t
WHERE NOT EXISTS (SELECT 1 FROM c JOIN rate_limits r ON r.key = c.key, t WHERE r.window_start > t.now - ${WINDOW_MS} AND r.count >= c.lim)
ON CONFLICT (key) DO UPDATE SET
  window_start = CASE WHEN rate_limits.window_start <= excluded.window_start - ${WINDOW_MS} THEN excluded.window_start ELSE rate_limits.window_start END,
  count = CASE WHEN rate_limits.window_start <= excluded.window_start - ${WINDOW_MS} THEN 1 ELSE rate_limits.count + 1 END
RETURNING key`;
  }

  function readStatement(keys: string[]): SQL {
    const list = sql.join(
      keys.map((k) => sql`${k}`),
      sql`, `,
    );
    return sql`SELECT key, window_start, count, ${DB_NOW} FROM rate_limits WHERE key IN (${list})`;
  }

  /** Runs the statements in one write transaction; each statement's rows as arrays. */
  async function run(stmts: SQL[]): Promise<unknown[][][]> {
    if (!remote) {
      return database.write(async (tx) => {
        const out: unknown[][][] = [];
        for (const s of stmts) out.push(await tx.values(s));
        return out;
      });
    }
    const batch = stmts.map((s) => {
      const q = dialect.sqlToQuery(s);
      return { sql: q.sql, args: q.params as never };
    });
    for (let attempt = 1; ; attempt++) {
      try {
        const results = await database.client.batch(batch, "write");
        return results.map((r) => r.rows.map((row) => Array.from(row)));
      } catch (err) {
        // sqld answers SQLITE_BUSY when its write lock stays taken (seen with
        // thousands of batches in flight). The batch rolled back, so running it
        // again is safe; should a lost answer hide a commit, the retry counts
        // once more: fewer requests pass, never more than the limit.
        if ((err as { code?: string }).code !== "SQLITE_BUSY" || attempt >= BUSY_ATTEMPTS) throw err;
        await Bun.sleep(attempt * 10 + Math.random() * 10);
      }
    }
  }

  async function decide(group: LimitCheck[][]): Promise<LimitResult[]> {
    const keys = [...new Set(group.flatMap((checks) => checks.map((c) => c.key)))];
    const results = await run([...group.map(countStatement), readStatement(keys)]);
    const windows = new Map(results[group.length]!.map((r) => [r[0] as string, { start: Number(r[1]), count: Number(r[2]), t: Number(r[3]) }]));
    return group.map((checks, i): LimitResult => {
      if (results[i]!.length === checks.length) return { ok: true };
      for (const c of checks) {
        const w = windows.get(c.key);
        if (w && w.start > w.t - WINDOW_MS && w.count >= c.limit) return { ok: false, key: c.key, retryAfterSeconds: retryAfter(w.start + WINDOW_MS, w.t) };
      }
      // The window that refused it closed between its statement and the read (milliseconds).
      return { ok: false, key: checks[0]!.key, retryAfterSeconds: 1 };
    });
  }

  async function send(): Promise<void> {
    while (queue.length > 0) {
      const group = queue.splice(0, MAX_GROUP);
      try {
        const results = await decide(group.map((p) => p.checks));
        for (const [i, p] of group.entries()) p.resolve(results[i]!);
      } catch (err) {
        opts.logger.error("Cannot decide rate limits", { err, requests: group.length });
        for (const p of group) p.reject(err);
      }
    }
    sending = false;
  }

  return {
    store: "database",
    hit(checks: LimitCheck[]): Promise<LimitResult> {
      if (checks.length === 0) return Promise.resolve({ ok: true });
      return new Promise((resolve, reject) => {
        queue.push({ checks, resolve, reject });
        if (sending) return;
        sending = true;
        // After the requests that arrived in this turn of the event loop, so they go
        // together: on a file the transaction is synchronous and nothing else would
        // get in while it runs (groups of ~17 instead of 1: 3x the HTTP throughput).
        setImmediate(() => void send());
      });
    },
    async load() {},
    async flush() {},
    start() {},
    async stop() {},
    async reset(keys: string[]): Promise<void> {
      await database.write((tx) => tx.delete(rateLimits).where(inArray(rateLimits.key, keys)));
    },
  };
}
