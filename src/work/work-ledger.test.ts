import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "../db/create-database.ts";
import { work } from "../db/schema/index.ts";
import { type FixtureWork, fixtureWork } from "./work-fixture.ts";
import { createWorkLedger, type EnqueueInput, type WorkLedger } from "./work-ledger.ts";

setDefaultTimeout(120_000);

/**
 * Two holders on one database file, each with its own database connection (as
 * two processes would be), on a clock the test moves. The in-process pairs
 * only ever write one after the other: two connections of one process must
 * not hold write transactions at once (notes/stack-facts.md), so the race
 * between claimers runs in two real processes.
 */

const LEASE = 300;
let dir: string | undefined;
const toClose: Database[] = [];
afterEach(() => {
  for (const d of toClose.splice(0)) d.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

interface Pair {
  path: string;
  a: WorkLedger<FixtureWork>;
  b: WorkLedger<FixtureWork>;
  dbA: Database;
  dbB: Database;
  clock: { t: number };
}

async function pair(): Promise<Pair> {
  dir = mkdtempSync(join(tmpdir(), "ledger-"));
  const path = join(dir, "t.db");
  const dbA = await createDatabase({ url: `file:${path}` });
  const dbB = await createDatabase({ url: `file:${path}` });
  toClose.push(dbA, dbB);
  const clock = { t: Date.now() };
  const now = () => clock.t;
  return {
    path,
    dbA,
    dbB,
    clock,
    a: createWorkLedger({ database: dbA, holder: "holder_A", leaseMs: LEASE, now, work: fixtureWork() }),
    b: createWorkLedger({ database: dbB, holder: "holder_B", leaseMs: LEASE, now, work: fixtureWork() }),
  };
}

/**
 * `p.a`'s ledger on a database whose write transactions wait `ms` (on the test clock) at their first statement,
 * as a transaction on a libSQL server waits there for the write lock (held for seconds by a writer killed mid-transaction).
 */
function waitingForLock(p: Pair, ms: number): WorkLedger<FixtureWork> {
  const write: Database["write"] = (fn) =>
    p.dbA.write((tx) => {
      let waited = false;
      const statements = new Proxy(tx, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target);
          if (typeof value !== "function") return value;
          return (...args: unknown[]) => {
            if (!waited) {
              waited = true;
              p.clock.t += ms;
            }
            return value.apply(target, args);
          };
        },
      });
      return fn(statements);
    });
  return createWorkLedger({ database: { ...p.dbA, write }, holder: "holder_A", leaseMs: LEASE, now: () => p.clock.t, work: fixtureWork() });
}

type Input = EnqueueInput<FixtureWork>;
const input = (over: Partial<Input> = {}): Input => ({ type: "retention", payload: {}, orgId: "org_a", entityId: "ent_1", ...over }) as Input;
const enqueue = (p: Pair, over: Partial<Input> = {}) => p.dbA.write((tx) => p.a.enqueue(tx, input(over)));
const rowsOf = (db: Database) => db.db.select().from(work);

describe("claims", () => {
  test("a row is claimed by one holder only, even by two processes racing for it", async () => {
    const p = await pair();
    // In one process, one after the other: the second holder finds nothing.
    const one = await enqueue(p);
    expect((await p.a.claim("retention"))?.id).toBe(one);
    expect(await p.b.claim("retention")).toBeNull();
    expect(await p.a.finish(one)).toBe(true);

    const ids = new Set<string>();
    for (let i = 0; i < 150; i++) ids.add(await enqueue(p, { entityId: `ent_${i}`, orgId: `org_${i % 3}` }));
    const startAt = Date.now() + 1500;
    const fixture = join(import.meta.dir, "claim-race.fixture.ts");
    const procs = ["race_1", "race_2"].map((h) => Bun.spawn([process.execPath, fixture, p.path, h, String(startAt)], { stdout: "pipe", stderr: "inherit" }));
    const outs = await Promise.all(procs.map(async (proc) => ((await proc.exited) === 0 ? (JSON.parse(await new Response(proc.stdout).text()) as string[]) : null)));
    expect(outs.every((o) => o !== null)).toBe(true);
    const [first, second] = outs as [string[], string[]];
    // Every row claimed, none twice.
    expect(first.filter((id) => second.includes(id))).toEqual([]);
    expect(new Set([...first, ...second])).toEqual(ids);
    const rows = (await rowsOf(p.dbA)).filter((r) => ids.has(r.id));
    for (const r of rows) expect(r).toMatchObject({ status: "running", attempts: 1, claimedBy: first.includes(r.id) ? "race_1" : "race_2" });
  }, 120_000);

  test("a non-holder's finish, retry, fail, unavailable, defer and advance change nothing", async () => {
    const p = await pair();
    const id = await enqueue(p);
    const claimed = await p.a.claim("retention");
    expect(claimed).toMatchObject({ id, status: "running", claimedBy: "holder_A", attempts: 1 });
    const before = await p.a.get(id);

    expect(await p.b.finish(id)).toBe(false);
    expect(await p.b.retry(id, 10, "nope")).toBe(false);
    let told = 0;
    expect(await p.b.fail(id, "nope", async () => told++)).toEqual({ failed: false });
    expect(told).toBe(0);
    expect(await p.b.unavailable(id, 10, "nope", Date.now())).toBe(false);
    expect(await p.b.defer(id, 10)).toBe(false);
    expect(await p.b.advance(id, { type: "live-watch", payload: { streamId: "ls_1" } })).toBe(false);
    expect(await p.dbB.write((tx) => p.b.holds(tx, id))).toBe(false);
    expect(await p.a.get(id)).toEqual(before);
    expect(await p.dbA.write((tx) => p.a.holds(tx, id))).toBe(true);
  });

  test("a lapsed lease is claimable by another holder, and the first holder's finish then fails", async () => {
    const p = await pair();
    const id = await enqueue(p);
    await p.a.claim("retention");
    // Still leased: nobody else may take it.
    p.clock.t += LEASE - 1;
    expect(await p.b.claim("retention")).toBeNull();

    p.clock.t += 2;
    const taken = await p.b.claim("retention");
    expect(taken).toMatchObject({ id, claimedBy: "holder_B", attempts: 2, leaseUntil: p.clock.t + LEASE });
    expect(await p.a.finish(id)).toBe(false);
    expect(await p.a.renew([id])).toEqual(new Set());
    expect((await p.a.get(id))?.status).toBe("running");
    expect(await p.b.finish(id)).toBe(true);
    expect(await p.a.get(id)).toMatchObject({ status: "done", finishedAt: p.clock.t, leaseUntil: null });
  });

  test("a claim or a renewal that waited for the write lock leases from when it holds the row, not from before the wait", async () => {
    const p = await pair();
    const id = await enqueue(p);
    const slow = waitingForLock(p, 5 * LEASE);
    expect(await slow.claim("retention")).toMatchObject({ id, claimedBy: "holder_A", leaseUntil: p.clock.t + LEASE });
    // Counted from before the wait, the lease had lapsed at its commit: the next claim took the row at once (a double run).
    p.clock.t += LEASE - 1;
    expect(await p.b.claim("retention")).toBeNull();
    expect(await slow.renew([id])).toEqual(new Set([id]));
    expect((await p.a.get(id))?.leaseUntil).toBe(p.clock.t + LEASE);
    p.clock.t += LEASE - 1;
    expect(await p.b.claim("retention")).toBeNull();
  });

  test("renew extends only our own running rows", async () => {
    const p = await pair();
    const mine = await enqueue(p, { entityId: "ent_mine" });
    const theirs = await enqueue(p, { entityId: "ent_theirs" });
    const done = await enqueue(p, { entityId: "ent_done" });
    expect((await p.a.claim("retention"))?.id).toBe(mine);
    expect((await p.b.claim("retention"))?.id).toBe(theirs);
    p.clock.t += 1;
    expect((await p.a.claim("retention"))?.id).toBe(done);
    await p.a.finish(done);
    const theirsBefore = await p.a.get(theirs);

    p.clock.t += 100;
    expect(await p.a.renew([mine, theirs, done])).toEqual(new Set([mine]));
    expect((await p.a.get(mine))?.leaseUntil).toBe(p.clock.t + LEASE);
    expect(await p.a.get(theirs)).toEqual(theirsBefore);
    expect(await p.a.get(done)).toMatchObject({ status: "done", leaseUntil: null });
    expect(await p.a.renew([])).toEqual(new Set());
  });
});

describe("dedupe keys", () => {
  test("enqueueing a queued key again reschedules its one row", async () => {
    const p = await pair();
    const t = p.clock.t;
    const first = await enqueue(p, { type: "live-watch", payload: { streamId: "one" }, runAfter: t + 1000, dedupeKey: "k" });
    const again = await enqueue(p, { type: "live-watch", payload: { streamId: "two" }, runAfter: t + 5000, dedupeKey: "k" });
    expect(again).toBe(first);
    const rows = await rowsOf(p.dbA);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: first, status: "queued", runAfter: t + 5000, payload: { streamId: "two" } });

    // While it runs, the running row answers for the key; once done, the key is free again.
    p.clock.t = t + 5000;
    expect((await p.a.claim("live-watch"))?.id).toBe(first);
    expect(await enqueue(p, { type: "live-watch", payload: { streamId: "three" }, dedupeKey: "k" })).toBe(first);
    expect(await rowsOf(p.dbA)).toHaveLength(1);
    await p.a.finish(first);
    const third = await enqueue(p, { type: "live-watch", payload: { streamId: "three" }, dedupeKey: "k" });
    expect(third).not.toBe(first);
    expect((await rowsOf(p.dbA)).map((r) => r.status).sort()).toEqual(["done", "queued"]);
  });

  test("cancelKey deletes a queued row, cancels a running one (its holder no longer holds it), and spares `except`", async () => {
    const p = await pair();
    const queued = await enqueue(p, { dedupeKey: "timer:x", runAfter: p.clock.t + 10_000 });
    const running = await enqueue(p, { dedupeKey: "timer:y", entityId: "ent_2" });
    expect((await p.a.claim("retention"))?.id).toBe(running);

    await p.dbA.write((tx) => p.a.cancelKey(tx, "timer:x"));
    await p.dbA.write((tx) => p.a.cancelKey(tx, "timer:y", running));
    await p.dbA.write((tx) => p.a.cancelKey(tx, "timer:none"));
    let rows = await rowsOf(p.dbA);
    expect(rows.map((r) => [r.id, r.status])).toEqual([[running, "running"]]);
    expect(rows.some((r) => r.id === queued)).toBe(false);
    await p.dbA.write((tx) => p.a.cancelKey(tx, "timer:y"));
    rows = await rowsOf(p.dbA);
    expect(rows.map((r) => [r.id, r.status])).toEqual([[running, "cancelled"]]);
    expect(await p.dbA.write((tx) => p.a.holds(tx, running))).toBe(false);
  });
});

describe("fairness and due times", () => {
  test("organizations take turns, whatever the length of their queues", async () => {
    const p = await pair();
    const t = p.clock.t;
    // org_a's whole queue is older than org_b's.
    for (let i = 0; i < 3; i++) await enqueue(p, { orgId: "org_a", entityId: `a${i}`, runAfter: t - 100 + i });
    for (let i = 0; i < 2; i++) await enqueue(p, { orgId: "org_b", entityId: `b${i}`, runAfter: t - 50 + i });

    const served: string[] = [];
    for (let i = 0; ; i++) {
      // Both holders share the turns: they are remembered in the database.
      const ledger = i % 2 ? p.b : p.a;
      const row = await ledger.claim("retention");
      if (!row) break;
      served.push(row.entityId);
      expect(await ledger.finish(row.id)).toBe(true);
    }
    expect(served).toEqual(["a0", "b0", "a1", "b1", "a2"]);
  });

  test("perOrgLimit leaves an organization at its limit out of the turn", async () => {
    const p = await pair();
    for (let i = 0; i < 3; i++) await enqueue(p, { orgId: "org_a", entityId: `a${i}`, runAfter: p.clock.t - 100 + i });
    await enqueue(p, { orgId: "org_b", entityId: "b0" });
    expect((await p.a.claim("retention", { perOrgLimit: 1 }))?.entityId).toBe("a0");
    expect((await p.b.claim("retention", { perOrgLimit: 1 }))?.entityId).toBe("b0");
    expect(await p.a.claim("retention", { perOrgLimit: 1 })).toBeNull();
    // Without the limit org_a's queue is served.
    expect((await p.a.claim("retention"))?.entityId).toBe("a1");
  });

  test("nextDue is the earliest queued row's due time; running and finished rows do not count", async () => {
    const p = await pair();
    const t = p.clock.t;
    expect(await p.a.nextDue()).toBeNull();
    await enqueue(p, { entityId: "late", runAfter: t + 500 });
    const early = await enqueue(p, { entityId: "early", runAfter: t + 200 });
    expect(await p.a.nextDue()).toBe(t + 200);
    // Not due yet: nothing to claim.
    expect(await p.a.claim("retention")).toBeNull();

    p.clock.t = t + 300;
    expect((await p.a.claim("retention"))?.id).toBe(early);
    expect(await p.a.nextDue()).toBe(t + 500);
    await p.a.finish(early);
    expect(await p.a.nextDue()).toBe(t + 500);
    p.clock.t = t + 600;
    const late = await p.a.claim("retention");
    expect(late?.entityId).toBe("late");
    expect(await p.a.nextDue()).toBeNull();
    // A retry queues it again, due after its delay.
    expect(await p.a.retry(late!.id, 1000, "boom")).toBe(true);
    expect(await p.a.nextDue()).toBe(t + 1600);
    expect(await p.a.get(late!.id)).toMatchObject({ status: "queued", claimedBy: null, leaseUntil: null, lastError: "boom", attempts: 1 });
  });
});
