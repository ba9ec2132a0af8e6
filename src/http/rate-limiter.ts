import { type SQL, inArray, lt, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/create-database.ts";
import { rateLimits } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";

export type { LimitCheck, LimitResult, RateLimiter, RateLimitStore } from "./rate-limit-types.ts";
import type { LimitCheck, LimiterOptions, LimitResult, RateLimiter } from "./rate-limit-types.ts";
import { retryAfter } from "./rate-limit-types.ts";
import { createDatabaseLimiter } from "./database-rate-limiter.ts";

/**
 * Fixed one-minute windows that open on a key's first request, so Retry-After
 * (the time until the window closes) is exactly enough to wait.
 */
export function createRateLimiter(opts: LimiterOptions): RateLimiter {
  return opts.store === "database" ? createDatabaseLimiter(opts) : createMemoryLimiter(opts);
}

/** Closed windows deleted per statement, so no delete holds the write lock for long. */
const DELETE_BATCH = 500;

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
