import { createClient, type Client } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { boundedBy } from "../dependency-errors.ts";
import { withBusyRetry } from "./busy-retry.ts";
import { migrateOnce } from "./migrate-once.ts";
import { createHotReader, type HotReader } from "./hot-reader.ts";
import { sql } from "drizzle-orm";
import { CHANGE_VERSION_SQL, type ChangeFeed, createChangeFeed } from "./change-feed.ts";
import { createReadCache, type ReadCache } from "./read-cache.ts";
import { cacheLibsqlStatements } from "./statement-cache.ts";
import * as schema from "./schema/index.ts";

export type { HotReader };
export type Schema = typeof schema;
export type Db = LibSQLDatabase<Schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface Database {
  /** For reads: a pooled client, never blocked by the write queue. */
  readonly db: Db;
  /** The raw reader client, for reads where drizzle's query building costs more than the read. */
  readonly client: Client;
  /**
   * A prepared-statement reader for the per-request hot path (API key lookup).
   * On a `file:` database it is a read-only libSQL connection with cached
   * statements (~8 µs a lookup against ~60 µs through the client); on a remote
   * libSQL server it falls back to the client.
   */
  readonly hot: HotReader;
  /** Hot-path read results, kept while the database is unchanged (read-cache.ts); keys name the organization. */
  readonly cache: ReadCache;
  /** On a libSQL server, what tells the cache that another process committed (change-feed.ts); null on a file. */
  readonly feed: ChangeFeed | null;
  readonly url: string;
  /**
   * Runs `fn` in a write transaction. All writes of the process go through one
   * queue: overlapping libSQL transactions in one process fail or freeze the
   * event loop (notes/stack-facts.md), a queue makes them fast and safe.
   */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Refuses new writes, lets the queued ones finish (at most the write timeout),
   * then closes every connection. A connection closed inside a transaction kept
   * its write lock until the garbage collector finalized it: a service stopped
   * and started again in one process found its file locked (SQLITE_BUSY).
   */
  close(): Promise<void>;
}

const MIGRATIONS = join(import.meta.dir, "migrations");

/**
 * Creates `dir` (and missing parents) readable by the service's user only, and
 * tightens it to 0700 if it exists. A directory or file that belongs to another
 * user (EPERM) is left as it is: the operator chose it.
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodOwn(dir, 0o700);
}

function chmodOwn(path: string, mode: number): void {
  try {
    chmodSync(path, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") throw err;
  }
}

/**
 * The database file and its WAL and shared-memory files are 0600. The main
 * file is created empty with that mode before libSQL opens it (SQLite gives the
 * -wal and -shm files it creates the main file's mode); files left by an older
 * version are tightened too.
 */
function protectDatabaseFiles(path: string, phase: "before" | "after"): void {
  if (phase === "before") {
    if (!existsSync(path)) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    closeSync(openSync(path, "a", 0o600));
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodOwn(file, 0o600);
  }
}

function localDatabasePath(url: string): string | null {
  if (!url.startsWith("file:")) return null;
  const path = url.slice("file:".length).split("?")[0]!;
  return path && path !== ":memory:" && !url.includes("mode=memory") ? path : null;
}

export async function createDatabase(opts: {
  url: string;
  authToken?: string;
  /** How long the migration lock outlives a crashed migrator (migrate-once.ts; tests shorten it). */
  migrationLockLeaseMs?: number;
  /**
   * On a server: the longest one HTTP request to it (a statement, a batch) and
   * one write transaction of the queue may take; past it they fail with
   * DependencyUnavailable and the queue goes on (DATABASE_TIMEOUT_MS).
   */
  timeoutMs?: number;
}): Promise<Database> {
  const { url, authToken } = opts;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const isFile = url.startsWith("file:");
  // @libsql/client's local driver prepares every statement again: keep them per connection (statement-cache.ts).
  if (isFile) cacheLibsqlStatements();
  const localPath = localDatabasePath(url);
  if (localPath) protectDatabaseFiles(localPath, "before");
  // The writer is its own single-connection client so per-connection PRAGMAs
  // (synchronous) stick, and the queue guarantees it is never contended.
  // Over HTTP every request to the server is aborted past `timeoutMs` (a stalled server answers nothing at all).
  const fetchBounded = isFile ? undefined : (request: Request) => fetch(request, { signal: AbortSignal.timeout(timeoutMs) });
  const writerClient: Client = createClient({ url, authToken, timeout: 5000, concurrency: 1, fetch: fetchBounded } as Parameters<typeof createClient>[0]);
  const readerClient: Client = url.includes(":memory:") ? writerClient : createClient({ url, authToken, timeout: 5000, fetch: fetchBounded });
  if (isFile) {
    await writerClient.execute("PRAGMA journal_mode=WAL");
    await writerClient.execute("PRAGMA synchronous=NORMAL");
    await writerClient.execute("PRAGMA foreign_keys=ON");
  }
  if (localPath) protectDatabaseFiles(localPath, "after");
  // On a server, a write transaction that finds the write lock taken as it begins is begun again (busy-retry.ts);
  // a file waits in its busy timeout instead.
  const writer = drizzle(isFile ? writerClient : withBusyRetry(writerClient), { schema });
  const reader = drizzle(readerClient, { schema });
  await migrateOnce(writer, writerClient, { migrationsFolder: MIGRATIONS, leaseMs: opts.migrationLockLeaseMs });
  // On a server the read cache follows the change feed (change-feed.ts); its polls are bounded like every request.
  const feed = isFile ? null : createChangeFeed(readerClient);
  const hot = createHotReader(url, readerClient, feed);

  let tail: Promise<unknown> = Promise.resolve();
  let closed = false;

  /**
   * On a server: the transaction ends by reading the change counter (its own changes to cached tables included),
   * told to the feed once it committed, so this process's next cached read is not one from before its own write;
   * a commit that touched no cached table leaves the cache as it was. Bounded: one that does not finish in time
   * fails (503 for a request) and the queue goes on.
   */
  async function writeObserved<T>(fn: (tx: Tx) => Promise<T>, feed: ChangeFeed): Promise<T> {
    let counter = Number.NaN;
    let started = 0;
    const out = await boundedBy(
      writer.transaction(async (tx) => {
        const result = await fn(tx);
        started = performance.now();
        const row = (await tx.get(sql.raw(CHANGE_VERSION_SQL))) as Record<string, unknown> | unknown[] | undefined;
        counter = Number(Array.isArray(row) ? row[0] : row?.v);
        return result;
      }),
      timeoutMs,
      "database",
      "write transaction",
    );
    feed.observe(counter, started);
    return out;
  }
  return {
    db: reader,
    client: readerClient,
    hot,
    cache: createReadCache(hot),
    feed,
    url,
    write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(new Error("Cannot write: database is closed"));
      // On a server a transaction that does not finish in time fails (503 for a request) and the queue goes on;
      // on a file the busy timeout bounds the wait and statements run synchronously.
      const run = tail.then(() => (feed ? writeObserved(fn, feed) : writer.transaction(fn)));
      tail = run.catch(() => undefined);
      return run;
    },
    async close() {
      closed = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([tail, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
      hot.close();
      writerClient.close();
      if (readerClient !== writerClient) readerClient.close();
    },
  };
}
