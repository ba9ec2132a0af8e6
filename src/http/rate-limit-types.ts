import type { Database } from "../db/create-database.ts";
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

export interface LimiterOptions {
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

export const retryAfter = (windowEnd: number, t: number) => Math.max(1, Math.ceil((windowEnd - t) / 1000));
