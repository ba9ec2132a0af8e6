import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "./create-database.ts";
import { rateLimits } from "./schema/index.ts";

let dir: string;
let database: Database | undefined;
afterEach(async () => {
  await database?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("fifty overlapping write transactions all land, in order, on a real file", async () => {
  dir = mkdtempSync(join(tmpdir(), "db-"));
  database = await createDatabase({ url: `file:${join(dir, "t.db")}` });
  const writes = Array.from({ length: 50 }, (_, i) =>
    database!.write(async (tx) => {
      await tx.insert(rateLimits).values({ key: `k${i}`, windowStart: i, count: 1 });
      return i;
    }),
  );
  expect(await Promise.all(writes)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  const rows = await database.db.select().from(rateLimits);
  expect(rows.length).toBe(50);
  const mode = await (database.db as any).$client.execute("PRAGMA journal_mode");
  expect(String(mode.rows[0]![0])).toBe("wal");
});

test("a failing transaction rolls back and does not block the queue", async () => {
  dir = mkdtempSync(join(tmpdir(), "db-"));
  database = await createDatabase({ url: `file:${join(dir, "t.db")}` });
  const bad = database.write(async (tx) => {
    await tx.insert(rateLimits).values({ key: "a", windowStart: 1, count: 1 });
    throw new Error("boom");
  });
  await expect(bad).rejects.toThrow("boom");
  await database.write((tx) => tx.insert(rateLimits).values({ key: "b", windowStart: 1, count: 1 }));
  const rows = await database.db.select().from(rateLimits);
  expect(rows.map((r) => r.key)).toEqual(["b"]);
});

test("close lets a transaction in flight finish: the same process opens the file again and writes at once", async () => {
  dir = mkdtempSync(join(tmpdir(), "db-"));
  const url = `file:${join(dir, "t.db")}`;
  const first = await createDatabase({ url });
  const inFlight = first.write(async (tx) => {
    await tx.insert(rateLimits).values({ key: "before-close", windowStart: 1, count: 1 });
    await Bun.sleep(200);
    await tx.insert(rateLimits).values({ key: "still-inside", windowStart: 1, count: 1 });
  });
  await first.close();
  await inFlight;
  await expect(first.write(async () => undefined)).rejects.toThrow("closed");
  // A connection closed inside its transaction kept the write lock until the garbage collector finalized it.
  database = await createDatabase({ url, timeoutMs: 2000 });
  await database.write((tx) => tx.insert(rateLimits).values({ key: "after-reopen", windowStart: 1, count: 1 }));
  const keys = (await database.db.select().from(rateLimits)).map((r) => r.key).sort();
  expect(keys).toEqual(["after-reopen", "before-close", "still-inside"]);
});

test("a closed database never reads its -shm mapping again (the next connection to open the file alone truncates it)", async () => {
  dir = mkdtempSync(join(tmpdir(), "db-"));
  const path = join(dir, "t.db");
  const first = await createDatabase({ url: `file:${path}` });
  await first.write((tx) => tx.insert(rateLimits).values({ key: "a", windowStart: 1, count: 1 }));
  expect(typeof first.hot.version()).toBe("number");
  await first.close();
  Bun.gc(true);
  // Reading a mapping whose file was truncated is SIGBUS: the process dies. After close it is refused instead.
  database = await createDatabase({ url: `file:${path}` });
  expect(() => first.hot.version()).toThrow("closed");
});
