import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { until } from "../../test/support/events.ts";
import { startSqld, type Sqld } from "../../test/support/sqld.ts";
import { createDatabase, type Database } from "../db/create-database.ts";
import { createSecretCipher } from "../secrets/secret-cipher.ts";
import { createEndpointCache } from "./endpoint-cache.ts";
import { createEndpointStore, type SendableEndpoint } from "./endpoint-store.ts";

setDefaultTimeout(120_000);

let server: Sqld | undefined;
const opened: Database[] = [];
afterEach(async () => {
  for (const d of opened.splice(0)) d.close();
  await server?.stop();
  server = undefined;
});

const input = { url: "https://receiver.example/hook", events: ["VIDEO_READY" as never], fields: [], description: null };

test("an endpoint in use that another process deleted leaves this one's cache by itself; one not in use costs no query", async () => {
  // Two "processes": two clients of one real sqld, each with its own store.
  server = await startSqld();
  const [dbA, dbB] = await Promise.all([server.url, server.httpUrl].map((url) => createDatabase({ url })));
  opened.push(dbA!, dbB!);
  const cipher = createSecretCipher(randomBytes(32));
  const storeA = createEndpointStore({ database: dbA!, cipher });
  const storeB = createEndpointStore({ database: dbB!, cipher });
  const queries: string[][] = [];
  const cache = createEndpointCache(
    {
      sendableByIds: (ids) => {
        queries.push(ids);
        return storeB.sendableByIds(ids);
      },
    },
    { recheckMs: 100 },
  );

  const { row: kept } = await storeA.create("org_a", input);
  const { row: gone } = await storeA.create("org_a", input);
  const { row: idle } = await storeA.create("org_a", input);
  await cache.ensure([kept.id, gone.id, idle.id]);
  queries.length = 0;
  // Used once each: kept and gone are looked at again when due, idle is not.
  expect(cache.get(gone.id)?.url).toBe(input.url);
  expect(cache.has(kept.id)).toBe(true);

  expect(await storeA.remove("org_a", gone.id)).toEqual({ dropped: 0 });
  // No further use is needed: the look is on a timer.
  await until(
    async () => cache.isRemoved(gone.id),
    (removed) => removed,
  );
  expect(cache.get(gone.id)).toBeUndefined();
  expect(cache.get(kept.id)?.id).toBe(kept.id);
  expect(queries.flat()).not.toContain(idle.id);
  expect(queries.flat()).toContain(kept.id);

  // A deleted endpoint never comes back, from a lookup or a fan-out.
  await cache.ensure([gone.id]);
  cache.add(await storeB.sendableByIds([kept.id]).then((found) => [...found, { ...found[0]!, id: gone.id }]));
  expect(cache.has(gone.id)).toBe(false);

  // Nothing used: no more queries.
  await Bun.sleep(300);
  const settled = queries.length;
  await Bun.sleep(300);
  expect(queries.length).toBe(settled);
});

test("a database that does not answer keeps the entries until a look succeeds", async () => {
  let failing = true;
  const looks: number[] = [];
  const ep: SendableEndpoint = { id: "whk_1", orgId: "org_a", url: "https://r.example/", events: [], fields: [], secret: "s", createdAt: 1 };
  const cache = createEndpointCache(
    {
      // Once it answers, the endpoint has been deleted meanwhile.
      sendableByIds: async () => {
        looks.push(Date.now());
        if (failing) throw new Error("database unavailable");
        return [];
      },
    },
    { recheckMs: 50 },
  );
  cache.add([ep]);
  expect(cache.has(ep.id)).toBe(true);
  await until(
    async () => looks.length,
    (n) => n >= 1,
  );
  expect(cache.has(ep.id)).toBe(true);
  failing = false;
  await until(
    async () => cache.isRemoved(ep.id),
    (removed) => removed,
  );
  expect(cache.has(ep.id)).toBe(false);
});
