import { inArray, lt, sql } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import { rateLimits } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";

export interface LimitCheck {
  key: string;
  limit: number;
}

export type LimitResult = { ok: true } | { ok: false; retryAfterSeconds: number; key: string };

/**
 * Fixed one-minute windows that open on a key's first request, so Retry-After
 * (the time until the window closes) is exactly enough to wait. Counting is in
 * memory on the hot path; windows are flushed to the database every second and
 * on stop, so a restart does not hand out a fresh allowance.
 */
export function createRateLimiter(opts: { database: Database; logger: Logger; now?: () => number; flushEveryMs?: number; windowMs?: number }) {
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
      await tx.delete(rateLimits).where(lt(rateLimits.windowStart, cutoff));
    });
    for (const [key, w] of windows) if (w.start < cutoff && !dirty.has(key)) windows.delete(key);
  }

  return {
    /** Every check must pass; only then are all counted (a refused request consumes nothing). */
    hit(checks: LimitCheck[]): LimitResult {
      const t = now();
      for (const c of checks) {
        const w = current(c.key, t);
        if (w && w.count >= c.limit) {
          return { ok: false, key: c.key, retryAfterSeconds: Math.max(1, Math.ceil((w.start + WINDOW_MS - t) / 1000)) };
        }
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

    /** For tests: forget a key's window. */
    async reset(keys: string[]): Promise<void> {
      for (const k of keys) windows.delete(k);
      await opts.database.write((tx) => tx.delete(rateLimits).where(inArray(rateLimits.key, keys)));
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
