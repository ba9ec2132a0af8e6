import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSqld, type Sqld } from "../../test/support/sqld.ts";
import { createDatabase, type Database } from "../db/create-database.ts";
import { rateLimits } from "../db/schema/index.ts";
import { silentLogger } from "../log.ts";
import { createRateLimiter, type LimitResult, type RateLimiter } from "./rate-limiter.ts";

setDefaultTimeout(120_000);

/**
 * Two limiter instances, each with its own database clients, stand for two
 * service processes on one libSQL server (a real sqld).
 */
let sqld: Sqld;
const opened: Database[] = [];
beforeAll(async () => {
  sqld = await startSqld();
});
afterAll(async () => {
  for (const d of opened) d.close();
  await sqld.stop();
});

async function limiter(store: "memory" | "database", windowMs = 60_000, url = sqld.url): Promise<RateLimiter> {
  const database = await createDatabase({ url });
  opened.push(database);
  const l = createRateLimiter({ database, logger: silentLogger, store, windowMs });
  await l.load();
  return l;
}

let n = 0;
const fresh = (name: string) => `${name}:${++n}:${Math.random().toString(36).slice(2)}`;

test("database store: two instances hitting one key concurrently let exactly the limit through", async () => {
  const [a, b] = [await limiter("database"), await limiter("database")];
  const key = fresh("key");
  const results = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).hit([{ key, limit: 30 }])));
  expect(results.filter((r) => r.ok).length).toBe(30);
  const refused = results.filter((r): r is Extract<LimitResult, { ok: false }> => !r.ok);
  expect(refused.length).toBe(50);
  for (const r of refused) {
    expect(r.key).toBe(key);
    expect(r.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(r.retryAfterSeconds).toBeLessThanOrEqual(60);
  }
});

test("memory store: the same two instances each count their own share (what the database store fixes)", async () => {
  const [a, b] = [await limiter("memory"), await limiter("memory")];
  const key = fresh("key");
  const results = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).hit([{ key, limit: 30 }])));
  expect(results.filter((r) => r.ok).length).toBe(60);
});

test("database store: all checks or none; a refused request consumes nothing", async () => {
  const [a, b] = [await limiter("database"), await limiter("database")];
  const key = fresh("key");
  const org = fresh("org");
  const both = [
    { key, limit: 3 },
    { key: org, limit: 2 },
  ];
  expect(await a.hit(both)).toEqual({ ok: true });
  expect(await b.hit(both)).toEqual({ ok: true });
  // The organization's window is full: refused, and the key's count stays at 2.
  const refused = await a.hit(both);
  expect(refused).toMatchObject({ ok: false, key: org });
  expect(await b.hit(both)).toMatchObject({ ok: false, key: org });
  expect(await b.hit([{ key, limit: 3 }])).toEqual({ ok: true });
  expect(await a.hit([{ key, limit: 3 }])).toMatchObject({ ok: false, key });
});

test("database store: a window opens on the key's first request, and reopens once Retry-After has passed", async () => {
  const WINDOW = 1500;
  const [a, b] = [await limiter("database", WINDOW), await limiter("database", WINDOW)];
  const key = fresh("key");
  expect(await a.hit([{ key, limit: 1 }])).toEqual({ ok: true });
  const refused = await b.hit([{ key, limit: 1 }]);
  expect(refused.ok).toBe(false);
  if (refused.ok) return;
  expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  expect(refused.retryAfterSeconds).toBeLessThanOrEqual(2);
  await Bun.sleep(refused.retryAfterSeconds * 1000);
  expect(await b.hit([{ key, limit: 1 }])).toEqual({ ok: true });
  expect(await a.hit([{ key, limit: 1 }])).toMatchObject({ ok: false, key });
  // One row per key, reused window after window (retention deletes closed ones).
  const rows = await opened[0]!.db.select().from(rateLimits);
  expect(rows.filter((r) => r.key === key)).toMatchObject([{ count: 1 }]);
});

test("database store on a file: database goes through the write queue and counts the same", async () => {
  const dir = mkdtempSync(join(tmpdir(), "limiter-file-"));
  try {
    const l = await limiter("database", 60_000, `file:${join(dir, "db.sqlite")}`);
    const key = fresh("key");
    const results = await Promise.all(Array.from({ length: 20 }, () => l.hit([{ key, limit: 7 }])));
    expect(results.filter((r) => r.ok).length).toBe(7);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("memory store answers synchronously (no await on the embedded hot path)", async () => {
  const l = await limiter("memory");
  const r = l.hit([{ key: fresh("key"), limit: 1 }]);
  expect(r instanceof Promise).toBe(false);
  expect(r).toEqual({ ok: true });
});

test("memory store: a flush writes open windows and deletes closed ones", async () => {
  const dir = mkdtempSync(join(tmpdir(), "limiter-flush-"));
  try {
    const database = await createDatabase({ url: `file:${join(dir, "db.sqlite")}` });
    opened.push(database);
    let t = 1_000_000;
    const l = createRateLimiter({ database, logger: silentLogger, store: "memory", windowMs: 1000, now: () => t });
    l.hit([{ key: "old", limit: 5 }]);
    await l.flush();
    t += 5000;
    l.hit([{ key: "new", limit: 5 }]);
    await l.flush();
    expect((await database.db.select().from(rateLimits)).map((r) => [r.key, r.count])).toEqual([["new", 1]]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Hits `l` `rounds` times with `each` requests at once; counts passes and the answers given without a round trip. */
async function load(l: RateLimiter, key: string, limit: number, rounds: number, each: number) {
  let passed = 0;
  let synchronous = 0;
  for (let r = 0; r < rounds; r++) {
    const answers = Array.from({ length: each }, () => l.hit([{ key, limit }]));
    synchronous += answers.filter((a) => !(a instanceof Promise)).length;
    passed += (await Promise.all(answers)).filter((a) => a.ok).length;
  }
  return { passed, synchronous };
}

test("database store under load: two instances together pass exactly the limit", async () => {
  const [a, b] = [await limiter("database"), await limiter("database")];
  const key = fresh("key");
  const limit = 3_200;
  const [ra, rb] = await Promise.all([load(a, key, limit, 30, 100), load(b, key, limit, 30, 100)]);
  expect(ra.passed + rb.passed).toBe(limit);
  const rows = await opened.at(-1)!.db.select().from(rateLimits);
  expect(rows.find((r) => r.key === key)?.count).toBe(limit);
});

test("database store under load: most requests pass without a round trip (tokens claimed ahead from the recent rate)", async () => {
  const [a, b] = [await limiter("database"), await limiter("database")];
  const key = fresh("key");
  const [ra, rb] = await Promise.all([load(a, key, 64_000, 40, 100), load(b, key, 64_000, 40, 100)]);
  expect(ra.passed + rb.passed).toBe(8_000);
  expect(ra.synchronous + rb.synchronous).toBeGreaterThan(6_000);
});

test("database store: an instance that stops using a key leaves at most 1/20 of the limit unspent", async () => {
  const [a, b] = [await limiter("database"), await limiter("database")];
  const key = fresh("key");
  const limit = 3_200;
  // a sends at a steady rate for a while (it claims ahead), then stops; b then takes what is left.
  const ra = await load(a, key, limit, 10, 100);
  expect(ra.passed).toBe(1_000);
  const rb = await load(b, key, limit, 30, 100);
  expect(ra.passed + rb.passed).toBeLessThanOrEqual(limit);
  expect(ra.passed + rb.passed).toBeGreaterThanOrEqual(limit - limit / 20);
});

test("database store: a limit raised while its window is full applies to the next request", async () => {
  const [a, b] = [await limiter("database"), await limiter("database")];
  const key = fresh("key");
  expect(await a.hit([{ key, limit: 1 }])).toEqual({ ok: true });
  expect(await b.hit([{ key, limit: 1 }])).toMatchObject({ ok: false, key });
  expect(await b.hit([{ key, limit: 1 }])).toMatchObject({ ok: false, key });
  // The organization's settings changed: the same window, a higher limit.
  expect(await b.hit([{ key, limit: 2 }])).toEqual({ ok: true });
  expect(await a.hit([{ key, limit: 2 }])).toMatchObject({ ok: false, key });
});
