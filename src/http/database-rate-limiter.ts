import { inArray, type SQL, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { rateLimits } from "../db/schema/index.ts";
import { type LimitCheck, type LimiterOptions, type LimitResult, type RateLimiter, retryAfter } from "./rate-limit-types.ts";

/**
 * The database's clock in epoch milliseconds: one clock for every process,
 * so a window closes at the same instant whichever process asks.
 */
const DB_NOW = sql.raw("CAST(unixepoch('subsec') * 1000 AS INTEGER)");

/** Claims sent in one transaction at most. */
const MAX_GROUP = 128;

/** Tries of one batch when the server's write lock stays taken. */
const BUSY_ATTEMPTS = 5;

/**
 * Tokens a process may claim beyond the requests waiting (from its recent rate), at most this share of the limit:
 * what may be left unspent in a process that stops using a key, so the most that fewer than the limit can pass by
 * in one window, per other process. More than the limit never passes.
 */
const SPECULATIVE_SHARE = 1 / 32;

/** The recent rate is counted over this many milliseconds. */
const RATE_MS = 100;
/** A claim asks for this many milliseconds of the recent rate, and is renewed ahead once half of it is spent. */
const CLAIM_MS = 500;

/** A process's share of one key's window, read from the database's answer. */
interface Share {
  /** The database's `window_start` of the window these tokens belong to. */
  windowStart: number;
  /** Claimed from the database for this window and not spent yet. */
  tokens: number;
  /** performance.now() before which the window is surely still open (from the claim's start): tokens are spent only before it. */
  spendUntil: number;
  /** performance.now() at which the window surely closed (from the claim's answer): Retry-After. */
  closesAt: number;
  /**
   * The limit at which the window was found full: every request with that limit or a lower one is refused here until
   * it closes (counts only grow within a window); a raised limit (a settings change) asks the database again.
   */
  fullAt: number | null;
}

interface Rate {
  since: number;
  hits: number;
  last: number;
}

interface Pending {
  checks: LimitCheck[];
  resolve(r: LimitResult): void;
  reject(err: unknown): void;
  /** A claim made ahead, before the tokens run out: no request waits for it, and it spends nothing. */
  ahead?: boolean;
}

/**
 * Exact across processes without a round trip per request: each process claims tokens of a key's window from the
 * database (a conditional upsert, all of a request's checks or none, on the database's clock) and spends them
 * locally. A request with tokens for every check passes at once, synchronously; one without waits for a claim.
 * The sum of the claims never exceeds the limit, so however many processes share a key, no more than the limit
 * passes per window. A claim asks for the requests waiting for it plus, under a steady rate, about 50 ms of that
 * rate (at most 1/32 of the limit): tokens a process claimed and then did not need are lost for that window, so
 * fewer than the limit may pass by at most that much per process that stopped using the key. A window found full
 * is refused locally until it closes, since counts only grow within a window.
 *
 * Group commit: the claims of one turn of the event loop, and those made while a batch is on its way, go together
 * in one transaction (at most MAX_GROUP), one round trip to a libSQL server; requests of one turn waiting for the
 * same checks share one claim.
 *
 * Closed windows are deleted by retention (src/retention, `rate_limits` rule, batched): one row per key, reused
 * window after window.
 */
export function createDatabaseLimiter(opts: LimiterOptions): RateLimiter {
  const WINDOW_MS = opts.windowMs ?? 60_000;
  const { database } = opts;
  const dialect = new SQLiteAsyncDialect();
  // A server takes the batch in one request; on a `file:` database a batch
  // would run on the reader pool and wait for the write queue's lock while
  // blocking the event loop (notes/stack-facts.md), so it joins the queue.
  const remote = !database.url.startsWith("file:");
  const shares = new Map<string, Share>();
  const rates = new Map<string, Rate>();
  const queue: Pending[] = [];
  let sending = false;
  /** Keys with a claim ahead on its way. */
  const renewing = new Set<string>();

  /** The key's share while its window may still be spent from (a full one until it closes). */
  function shareOf(key: string, t: number): Share | undefined {
    const s = shares.get(key);
    if (!s) return undefined;
    if (t < s.spendUntil || (s.fullAt !== null && t < s.closesAt)) return s;
    shares.delete(key);
    return undefined;
  }

  function noteHit(key: string, t: number): void {
    let r = rates.get(key);
    if (!r) {
      if (rates.size > 10_000) rates.clear();
      r = { since: t, hits: 0, last: 0 };
      rates.set(key, r);
    }
    if (t - r.since >= RATE_MS) {
      r.last = t - r.since < 2 * RATE_MS ? r.hits : 0;
      r.hits = 0;
      r.since = t;
    }
    r.hits++;
  }

  /** Passes (spending one token of each check), refuses, or answers null: a claim is needed. */
  function decideLocally(checks: LimitCheck[], t: number): LimitResult | null {
    let missing = false;
    for (const c of checks) {
      const s = shareOf(c.key, t);
      if (s && s.fullAt !== null && c.limit <= s.fullAt) return { ok: false, key: c.key, retryAfterSeconds: retryAfter(s.closesAt, t) };
      if (!s || s.tokens < 1) missing = true;
    }
    if (missing) return null;
    for (const c of checks) shares.get(c.key)!.tokens--;
    return { ok: true };
  }

  /** What the recent rate spends in CLAIM_MS, at most SPECULATIVE_SHARE of the limit. */
  function speculative(c: LimitCheck): number {
    const r = rates.get(c.key);
    return Math.min(Math.floor(c.limit * SPECULATIVE_SHARE), Math.ceil((Math.max(r?.last ?? 0, r?.hits ?? 0) * CLAIM_MS) / RATE_MS));
  }

  function want(c: LimitCheck, waiting: number): number {
    return Math.max(waiting, speculative(c), 1);
  }

  /** After a request spent tokens: claims ahead for a key whose tokens fall under half a claim, so requests keep passing at once. */
  function renewAhead(checks: LimitCheck[], t: number): void {
    for (const c of checks) {
      const s = shareOf(c.key, t);
      const spec = speculative(c);
      if (!s || spec < 2 || s.tokens >= spec / 2 || renewing.has(c.key)) continue;
      renewing.add(c.key);
      enqueue({ checks: [c], resolve: () => renewing.delete(c.key), reject: () => renewing.delete(c.key), ahead: true });
    }
  }

  function enqueue(p: Pending): void {
    queue.push(p);
    if (sending) return;
    sending = true;
    // After the requests that arrived in this turn of the event loop, so they go together.
    setImmediate(() => void send());
  }

  function claimStatements(checks: Array<{ c: LimitCheck; want: number }>): SQL[] {
    const values = sql.join(
      checks.map(({ c, want }) => sql`(${c.key}, ${c.limit}, ${want})`),
      sql`, `,
    );
    const keys = sql.join(
      checks.map(({ c }) => sql`${c.key}`),
      sql`, `,
    );
    // Before: the windows as they were (what a claim added is the difference), and the database's now.
    const before = sql`SELECT t.now, r.key, r.window_start, r.count FROM (SELECT ${DB_NOW} AS now) t LEFT JOIN rate_limits r ON r.key IN (${keys})`;
    // Every check gets min(want, what is left) or none does: only if no check's open window is already at its limit.
    const claim = sql`WITH c(key, lim, want) AS (VALUES ${values}), t(now) AS (SELECT ${DB_NOW})
INSERT INTO rate_limits (key, window_start, count)
SELECT c.key, t.now, min(c.want, c.lim) FROM c, t
WHERE NOT EXISTS (SELECT 1 FROM c JOIN rate_limits r ON r.key = c.key, t WHERE r.window_start > t.now - ${WINDOW_MS} AND r.count >= c.lim)
ON CONFLICT (key) DO UPDATE SET
  window_start = CASE WHEN rate_limits.window_start <= excluded.window_start - ${WINDOW_MS} THEN excluded.window_start ELSE rate_limits.window_start END,
  count = CASE WHEN rate_limits.window_start <= excluded.window_start - ${WINDOW_MS} THEN excluded.count
    ELSE min(rate_limits.count + excluded.count, (SELECT lim FROM c WHERE c.key = excluded.key)) END
RETURNING key, window_start, count`;
    return [before, claim];
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
        // again is safe; should a lost answer hide a commit, the retry claims
        // once more: fewer requests pass, never more than the limit.
        if ((err as { code?: string }).code !== "SQLITE_BUSY" || attempt >= BUSY_ATTEMPTS) throw err;
        await Bun.sleep(attempt * 10 + Math.random() * 10);
      }
    }
  }

  /** Records one claim's answer in the shares. */
  function record(checks: LimitCheck[], before: unknown[][], after: unknown[][], sentAt: number, answeredAt: number): void {
    const dbNow = Number(before[0]![0]);
    const was = new Map(before.filter((r) => r[1] !== null).map((r) => [r[1] as string, { start: Number(r[2]), count: Number(r[3]) }]));
    const shareFor = (key: string, start: number): Share => {
      let s = shares.get(key);
      if (!s || s.windowStart !== start) {
        s = { windowStart: start, tokens: 0, spendUntil: 0, closesAt: 0, fullAt: null };
        shares.set(key, s);
      }
      // The statement ran between sentAt and answeredAt: the window surely lasts until the first, surely ended by the second.
      s.spendUntil = sentAt + (start + WINDOW_MS - dbNow);
      s.closesAt = answeredAt + (start + WINDOW_MS - dbNow);
      return s;
    };
    if (after.length > 0) {
      for (const r of after) {
        const key = r[0] as string;
        const start = Number(r[1]);
        const prior = was.get(key);
        const granted = Number(r[2]) - (prior && prior.start === start ? prior.count : 0);
        const share = shareFor(key, start);
        share.tokens += granted;
        share.fullAt = null;
      }
      return;
    }
    // Refused: the checks whose open window is at its limit are full until it closes.
    for (const c of checks) {
      const w = was.get(c.key);
      if (w && w.start > dbNow - WINDOW_MS && w.count >= c.limit) shareFor(c.key, w.start).fullAt = c.limit;
    }
  }

  async function send(): Promise<void> {
    while (queue.length > 0) {
      const group = queue.splice(0, MAX_GROUP);
      const t = performance.now();
      // Requests of one signature (the checks they lack) share a claim for all of them.
      const claims = new Map<string, { checks: LimitCheck[]; waiting: Pending[] }>();
      for (const p of group) {
        if (p.ahead) {
          const sig = `ahead\u0000${p.checks[0]!.key}\u0000${p.checks[0]!.limit}`;
          claims.set(sig, { checks: p.checks, waiting: [p] });
          continue;
        }
        const local = decideLocally(p.checks, t);
        if (local) {
          p.resolve(local);
          continue;
        }
        const lacking = p.checks.filter((c) => !((shareOf(c.key, t)?.tokens ?? 0) >= 1));
        const sig = lacking.map((c) => `${c.key}\u0000${c.limit}`).join("\u0001");
        const claim = claims.get(sig);
        if (claim) claim.waiting.push(p);
        else claims.set(sig, { checks: lacking, waiting: [p] });
      }
      if (claims.size === 0) continue;
      const list = [...claims.values()];
      try {
        const sentAt = performance.now();
        const results = await run(list.flatMap((cl) => claimStatements(cl.checks.map((c) => ({ c, want: cl.waiting[0]!.ahead ? Math.max(1, speculative(c)) : want(c, cl.waiting.length) })))));
        const answeredAt = performance.now();
        for (const [i, cl] of list.entries()) record(cl.checks, results[2 * i]!, results[2 * i + 1]!, sentAt, answeredAt);
        const now = performance.now();
        for (const cl of list) {
          for (const p of cl.waiting) {
            if (p.ahead) {
              p.resolve({ ok: true });
              continue;
            }
            const local = decideLocally(p.checks, now);
            // Still lacking (the tokens went to others of the group, or the window closed meanwhile): claim again.
            if (local) p.resolve(local);
            else queue.push(p);
          }
        }
      } catch (err) {
        opts.logger.error("Cannot decide rate limits", { err, requests: group.length });
        for (const cl of list) for (const p of cl.waiting) p.reject(err);
      }
    }
    sending = false;
  }

  return {
    store: "database",
    hit(checks: LimitCheck[]): LimitResult | Promise<LimitResult> {
      if (checks.length === 0) return { ok: true };
      const t = performance.now();
      for (const c of checks) noteHit(c.key, t);
      const local = decideLocally(checks, t);
      if (local) {
        if (local.ok) renewAhead(checks, t);
        return local;
      }
      return new Promise((resolve, reject) => enqueue({ checks, resolve, reject }));
    },
    async load() {},
    async flush() {},
    start() {},
    async stop() {},
    async reset(keys: string[]): Promise<void> {
      for (const k of keys) shares.delete(k);
      await database.write((tx) => tx.delete(rateLimits).where(inArray(rateLimits.key, keys)));
    },
  };
}
