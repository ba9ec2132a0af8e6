import type { Client } from "@libsql/client";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { migrate } from "drizzle-orm/libsql/migrator";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import { randomToken } from "../ids.ts";
import { isBusy } from "./busy-retry.ts";

/**
 * Applies the migrations exactly once, however many processes start on the
 * database together.
 *
 * drizzle's libSQL migrator reads the last applied migration, then sends every
 * newer one in one batch (one transaction). Two processes starting together
 * both read "none applied" and both send the batch: on sqld the second fails
 * (`table actors already exists`), and a migration whose statements cannot
 * fail twice (an UPDATE back-fill) would be applied twice. So:
 *
 * - **Fast path:** every migration already applied → nothing is written (a
 *   restart, or a replica that forwards writes, costs one read).
 * - **A lock row with a lease** (`__vidlive_migration_lock`, one row): the
 *   process whose `INSERT … ON CONFLICT DO UPDATE … WHERE expires_at <= now`
 *   returns the row migrates; the others poll with reads until the row is
 *   gone, then find everything applied. The lease runs on the database's
 *   clock, so clocks of several machines never disagree; a migrator that
 *   crashed blocks the others for at most the lease.
 * - **Waiters only read while the lease runs.** sqld rolls back a write
 *   transaction older than 5 s as soon as another connection waits for the
 *   write lock (`TRANSACTION_TIMEOUT`, measured): a waiter trying to take the
 *   lock would cut a long migration. For the same reason the holder does not
 *   renew its lease during the batch: the lease must outlast the longest
 *   migration (60 s by default).
 * - **Backstop:** a unique index on `__drizzle_migrations(created_at)`. Should
 *   a lease ever lapse while its migration still runs, the second batch fails
 *   at its bookkeeping insert and rolls back whole: a migration is never
 *   applied twice, whatever its statements.
 */
export const MIGRATION_LOCK_TABLE = "__vidlive_migration_lock";
const MIGRATIONS_TABLE = "__drizzle_migrations";
/** Now on the database's clock, in epoch milliseconds (julianday has millisecond resolution; unixepoch('subsec') needs SQLite 3.42). */
const DB_NOW = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

export interface MigrateOnceOptions {
  migrationsFolder: string;
  /** How long the lock holds without its holder (default 60 s): the longest a crashed migrator blocks a start. */
  leaseMs?: number;
  /** How often a waiting process looks at the lock (default 100 ms). */
  pollMs?: number;
}

/** Answers whether this call applied migrations (false: they were all applied already, by this or another process). */
export async function migrateOnce(db: LibSQLDatabase<any>, client: Client, opts: MigrateOnceOptions): Promise<boolean> {
  const { migrationsFolder } = opts;
  const leaseMs = opts.leaseMs ?? 60_000;
  const pollMs = opts.pollMs ?? 100;
  const latest = Math.max(0, ...readMigrationFiles({ migrationsFolder }).map((m) => m.folderMillis));
  const holder = `mig_${randomToken(12)}`;
  const allApplied = async () => (await lastApplied(client)) >= latest;

  for (;;) {
    if (await allApplied()) return false;
    if (!(await tableExists(client, MIGRATION_LOCK_TABLE))) {
      await client.execute(`CREATE TABLE IF NOT EXISTS ${MIGRATION_LOCK_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL, expires_at INTEGER NOT NULL)`);
    }
    // A read first: while someone's lease runs, waiting costs no write (see above).
    const held = await client.execute(`SELECT expires_at - ${DB_NOW} FROM ${MIGRATION_LOCK_TABLE} WHERE id = 1`);
    if (held.rows[0] && Number(held.rows[0][0]) > 0) {
      await Bun.sleep(Math.min(pollMs, Math.max(1, Number(held.rows[0][0]))));
      continue;
    }
    const taken = await client.execute({
      sql: `INSERT INTO ${MIGRATION_LOCK_TABLE} (id, holder, expires_at) VALUES (1, ?, ${DB_NOW} + ?)
            ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE ${MIGRATION_LOCK_TABLE}.expires_at <= ${DB_NOW}
            RETURNING holder`,
      args: [holder, leaseMs],
    });
    if (taken.rows[0]?.[0] !== holder) {
      await Bun.sleep(pollMs);
      continue;
    }
    try {
      // Another process may have finished between our first look and the lock.
      if (await allApplied()) return false;
      await ensureBookkeeping(client);
      await migrate(db, { migrationsFolder });
      return true;
    } catch (err) {
      // Our lease lapsed and another process applied them meanwhile (the backstop failed our batch).
      if (await allApplied()) return false;
      // The batch found the write lock taken (a process of the older version still writing): it rolled back whole; again.
      if (isBusy(err)) {
        await Bun.sleep(pollMs);
        continue;
      }
      throw err;
    } finally {
      await client.execute({ sql: `DELETE FROM ${MIGRATION_LOCK_TABLE} WHERE id = 1 AND holder = ?`, args: [holder] }).catch(() => undefined);
    }
  }
}

async function tableExists(client: Client, name: string): Promise<boolean> {
  const res = await client.execute({ sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", args: [name] });
  return res.rows.length > 0;
}

/** The `created_at` (journal `when`) of the newest applied migration; 0 when none. */
async function lastApplied(client: Client): Promise<number> {
  if (!(await tableExists(client, MIGRATIONS_TABLE))) return 0;
  const res = await client.execute(`SELECT max(created_at) FROM ${MIGRATIONS_TABLE}`);
  return Number(res.rows[0]?.[0] ?? 0);
}

/** drizzle's own table (same definition, so its CREATE IF NOT EXISTS is a no-op) with the backstop index. */
async function ensureBookkeeping(client: Client): Promise<void> {
  await client.execute(`CREATE TABLE IF NOT EXISTS "${MIGRATIONS_TABLE}" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
  try {
    await client.execute(`CREATE UNIQUE INDEX IF NOT EXISTS "${MIGRATIONS_TABLE}_created_at" ON "${MIGRATIONS_TABLE}" (created_at)`);
  } catch {
    // A database that already recorded a migration twice (a race of an older version) keeps working without the
    // backstop: the lock alone still serialises migrators.
  }
}
