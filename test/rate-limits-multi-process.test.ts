import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "../src/db/create-database.ts";
import type { Limits } from "../src/orgs/org-settings.ts";
import { createOrgStore } from "../src/orgs/org-store.ts";
import { type Child, spawnService } from "./support/service-process.ts";
import { type Sqld, startSqld } from "./support/sqld.ts";

setDefaultTimeout(120_000);

/**
 * Spec section 8: "more servers using one key do not add allowance". Three
 * service processes on one libSQL server (a real sqld; RATE_LIMIT_STORE
 * defaults to `database` there) answer one key's concurrent requests, spread
 * evenly: exactly the limit succeeds across all three. With the per-process
 * `memory` store each would let the limit through (three times it in all).
 */

let sqld: Sqld;
let database: Database;
const children: Child[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  sqld = await startSqld();
  const env = () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-limits-"));
    dirs.push(dir);
    return { DATA_DIR: dir, DATABASE_URL: sqld.url, SECRET_KEY: "e".repeat(64), PORT: "0", RTMP_PORT: "0" };
  };
  children.push(await spawnService(env()));
  const org = { orgId: children[0]!.orgId, apiKey: children[0]!.apiKey };
  // One after the other: this test is about limits, not about processes migrating together.
  for (let i = 0; i < 2; i++) children.push(await spawnService(env(), org));
  database = await createDatabase({ url: sqld.url });
}, 300_000);

afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
  database?.close();
  await sqld?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const setLimits = (limits: Partial<Limits>) => createOrgStore(database).updateSettings(children[0]!.orgId, (s) => ({ ...s, limits: { ...s.limits, ...limits } }));

/** `n` requests at once, round-robin over the three processes. */
const burst = (n: number, send: (c: Child) => Promise<Response>) => Promise.all(Array.from({ length: n }, (_, i) => send(children[i % children.length]!)));

async function expectRefusals(responses: Response[]) {
  for (const r of responses) {
    expect(r.status).toBe(429);
    const retryAfter = Number(r.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await r.json()).toMatchObject({ success: false, message: expect.any(String), error: { code: "RATE_LIMITED" }, meta: { timestamp: expect.any(String) } });
  }
}

test("per key: one key's requests through three processes get exactly the limit", async () => {
  await setLimits({ requestsPerMinute: 9 });
  const responses = await burst(36, (c) => c.api("/organization/"));
  const passed = responses.filter((r) => r.status !== 429);
  expect(passed.map((r) => r.status)).toEqual(Array(9).fill(200));
  await expectRefusals(responses.filter((r) => r.status === 429));
  // Every process refuses now, whichever answered the successes.
  for (const c of children) expect((await c.api("/organization/")).status).toBe(429);
});

test("per organization: POST /videos/upload-url/ through three processes gets exactly the limit", async () => {
  // The key's own ceiling out of the way (its window from the test above stays open).
  await setLimits({ requestsPerMinute: 1_000_000, uploadUrlPerMinute: 5 });
  const responses = await burst(24, (c) => c.api("/videos/upload-url/", { method: "POST", json: {} }));
  const passed = responses.filter((r) => r.status !== 429);
  expect(passed.map((r) => r.status)).toEqual(Array(5).fill(201));
  await expectRefusals(responses.filter((r) => r.status === 429));
  // Other routes are not limited by the organization's upload-url bucket.
  for (const c of children) expect((await c.api("/organization/")).status).toBe(200);
});
