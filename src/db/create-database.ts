import { createClient, type Client } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import { migrate } from "drizzle-orm/libsql/migrator";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import * as schema from "./schema/index.ts";

export type Schema = typeof schema;
export type Db = LibSQLDatabase<Schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface Database {
  /** For reads: a pooled client, never blocked by the write queue. */
  readonly db: Db;
  readonly url: string;
  /**
   * Runs `fn` in a write transaction. All writes of the process go through one
   * queue: overlapping libSQL transactions in one process fail or freeze the
   * event loop (notes/stack-facts.md), a queue makes them fast and safe.
   */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  close(): void;
}

const MIGRATIONS = join(import.meta.dir, "migrations");

export async function createDatabase(opts: { url: string; authToken?: string }): Promise<Database> {
  const { url, authToken } = opts;
  const isFile = url.startsWith("file:");
  if (isFile) {
    const path = url.slice("file:".length);
    if (path && path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  }
  // The writer is its own single-connection client so per-connection PRAGMAs
  // (synchronous) stick, and the queue guarantees it is never contended.
  const writerClient: Client = createClient({ url, authToken, timeout: 5000, concurrency: 1 } as Parameters<typeof createClient>[0]);
  const readerClient: Client = url.includes(":memory:") ? writerClient : createClient({ url, authToken, timeout: 5000 });
  if (isFile) {
    await writerClient.execute("PRAGMA journal_mode=WAL");
    await writerClient.execute("PRAGMA synchronous=NORMAL");
    await writerClient.execute("PRAGMA foreign_keys=ON");
  }
  const writer = drizzle(writerClient, { schema });
  const reader = drizzle(readerClient, { schema });
  await migrate(writer, { migrationsFolder: MIGRATIONS });

  let tail: Promise<unknown> = Promise.resolve();
  let closed = false;
  return {
    db: reader,
    url,
    write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(new Error("Cannot write: database is closed"));
      const run = tail.then(() => writer.transaction(fn));
      tail = run.catch(() => undefined);
      return run;
    },
    close() {
      closed = true;
      writerClient.close();
      if (readerClient !== writerClient) readerClient.close();
    },
  };
}
