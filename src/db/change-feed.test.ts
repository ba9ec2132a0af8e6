import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { startSqld, type Sqld } from "../../test/support/sqld.ts";
import { createDatabase, type Database } from "./create-database.ts";

setDefaultTimeout(120_000);

/**
 * The read cache on a libSQL server (change-feed.ts): two processes' databases
 * on one real sqld. What the other wrote is read again within 1 s, what this one
 * wrote at once; writes to tables nothing caches leave the cache alone; a server
 * that does not answer turns the cache off.
 */

let server: Sqld;
let a: Database;
let b: Database;

beforeAll(async () => {
  server = await startSqld();
  a = await createDatabase({ url: server.url });
  b = await createDatabase({ url: server.url });
  await a.client.execute("INSERT INTO organizations (id, name, settings, created_at) VALUES ('org_feed', 'Feed', '{}', 0)");
  // Past one poll: b has seen the insert, so what the tests measure starts from a settled counter.
  await Bun.sleep(1000);
});

afterAll(async () => {
  a?.close();
  b?.close();
  await server?.stop();
});

/** Reads the organization's name through `d`'s cache, counting the reads that went to the server. */
function reader(d: Database) {
  let loads = 0;
  return {
    get loads() {
      return loads;
    },
    read: () =>
      d.cache.read("test:org_feed", async () => {
        loads++;
        return (await d.client.execute("SELECT name FROM organizations WHERE id = 'org_feed'")).rows[0]?.[0];
      }),
  };
}

async function untilFresh(d: Database): Promise<void> {
  for (let i = 0; i < 200 && d.hot.version() === null; i++) await Bun.sleep(25);
  expect(d.hot.version()).not.toBeNull();
}

test("on a server the cache answers repeated reads without a round trip", async () => {
  await untilFresh(b);
  const r = reader(b);
  expect(await r.read()).toBe("Feed");
  expect(await r.read()).toBe("Feed");
  expect(await r.read()).toBe("Feed");
  expect(r.loads).toBe(1);
});

test("another process's commit to a cached table is read again within 1 s; one to an uncached table changes nothing", async () => {
  await untilFresh(b);
  const r = reader(b);
  await r.read();
  const before = b.hot.version();
  // rate_limits is written on every request on a server: it must not empty the cache.
  await a.write((tx) => tx.run("INSERT INTO rate_limits (key, window_start, count) VALUES ('feed-test', 0, 1)" as never));
  await Bun.sleep(1000);
  // (On a machine too busy to poll in time the cache is off for a moment: wait until it is on, then compare.)
  await untilFresh(b);
  expect(b.hot.version()).toBe(before);
  await a.write((tx) => tx.run("UPDATE organizations SET name = 'Renamed' WHERE id = 'org_feed'" as never));
  await Bun.sleep(1000);
  expect(await r.read()).toBe("Renamed");
  await untilFresh(b);
  expect(b.hot.version()).not.toBe(before);
});

test("this process's own commit is read again at once", async () => {
  await untilFresh(b);
  const r = reader(b);
  await r.read();
  await b.write((tx) => tx.run("UPDATE organizations SET name = 'Mine' WHERE id = 'org_feed'" as never));
  expect(await r.read()).toBe("Mine");
});

test("a raw statement outside the write queue (the CLI, an operator) is seen too: the triggers count it", async () => {
  await untilFresh(b);
  const r = reader(b);
  await r.read();
  await a.client.execute("UPDATE organizations SET name = 'Raw' WHERE id = 'org_feed'");
  await Bun.sleep(1000);
  expect(await r.read()).toBe("Raw");
});

test("a server that stops answering turns the cache off within 1 s, and on again when it answers", async () => {
  await untilFresh(b);
  process.kill(server.pid, "SIGSTOP");
  try {
    await Bun.sleep(1000);
    expect(b.hot.version()).toBeNull();
  } finally {
    process.kill(server.pid, "SIGCONT");
  }
  await untilFresh(b);
});
