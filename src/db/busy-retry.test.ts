import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { type Client, createClient, LibsqlError, type Transaction } from "@libsql/client";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSqld, type Sqld } from "../../test/support/sqld.ts";
import { isBusy, withBusyRetry } from "./busy-retry.ts";

setDefaultTimeout(120_000);

let dir: string | undefined;
let server: Sqld | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  await server?.stop();
  server = undefined;
});

const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: unknown) => err,
  );

function pass(o: object, p: string | symbol): unknown {
  const v = Reflect.get(o, p, o);
  return typeof v === "function" ? v.bind(o) : v;
}

test("a transaction whose first statement answers busy is begun again on the server, invisibly, and lands once", async () => {
  server = await startSqld();
  const real = createClient({ url: server.url });
  clients.push(real);
  await real.execute("CREATE TABLE t (n INTEGER)");
  // sqld's rare immediate SQLITE_BUSY (busy-retry.ts) cannot be provoked on demand: the first two
  // transactions get it injected at their first statement, after really beginning on the server.
  const begun: Transaction[] = [];
  const flaky = new Proxy(real, {
    get(target, prop) {
      if (prop !== "transaction") return pass(target, prop);
      return async (mode: "write") => {
        const tx = await target.transaction(mode);
        begun.push(tx);
        if (begun.length > 2) return tx;
        return new Proxy(tx, {
          get(t, p) {
            if (p === "execute")
              return async (stmt: string) => {
                await t.execute(stmt);
                throw new LibsqlError("SQLITE_BUSY: database is locked", "SQLITE_BUSY");
              };
            return pass(t, p);
          },
        });
      };
    },
  });
  const retries: number[] = [];
  const tx = await withBusyRetry(flaky, { onRetry: (attempt) => retries.push(attempt) }).transaction("write");
  await tx.execute("INSERT INTO t VALUES (1)");
  await tx.execute("INSERT INTO t VALUES (2)");
  await tx.commit();
  expect(retries).toEqual([1, 2]);
  // The abandoned attempts were rolled back: their first insert did not land.
  expect(begun.slice(0, 2).every((t) => t.closed)).toBe(true);
  expect((await real.execute("SELECT n FROM t ORDER BY n")).rows.map((r) => Number(r[0]))).toEqual([1, 2]);
});

test("errors that are not busy, and a busy error that outlasts the attempts, reach the caller", async () => {
  // A real busy error: two connections to one file with no busy timeout.
  dir = mkdtempSync(join(tmpdir(), "busy-"));
  const url = `file:${join(dir, "t.db")}`;
  const a = createClient({ url, timeout: 0 } as Parameters<typeof createClient>[0]);
  const b = createClient({ url, timeout: 0 } as Parameters<typeof createClient>[0]);
  clients.push(a, b);
  await a.execute("PRAGMA journal_mode=WAL");
  await a.execute("CREATE TABLE t (n INTEGER)");
  const retries: number[] = [];
  const retrying = withBusyRetry(b, { attempts: 3, onRetry: (attempt) => retries.push(attempt) });

  const tx = await retrying.transaction("write");
  await expect(tx.execute("INSERT INTO missing VALUES (1)")).rejects.toThrow(/no such table/);
  await tx.rollback();
  expect(retries).toEqual([]);

  const held = await a.transaction("write");
  await held.execute("INSERT INTO t VALUES (1)");
  const blocked = await retrying.transaction("write");
  expect(isBusy(await failure(blocked.execute("INSERT INTO t VALUES (2)")))).toBe(true);
  expect(retries).toEqual([1, 2]);
  await held.rollback();
});
