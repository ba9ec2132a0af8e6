import { afterAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "../db/create-database.ts";
import { createSecretCipher } from "../secrets/secret-cipher.ts";
import { createDeliveryStore } from "./delivery-store.ts";
import { createEndpointStore } from "./endpoint-store.ts";

const dir = mkdtempSync(join(tmpdir(), "dlv-store-"));
const database: Database = await createDatabase({ url: `file:${join(dir, "d.db")}` });
afterAll(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});
const endpoints = createEndpointStore({ database, cipher: createSecretCipher(randomBytes(32)) });
const deliveries = createDeliveryStore({ database, endpoints });

/** `count` pending deliveries of a fresh endpoint of `orgId`, unclaimed and due now. */
async function pending(orgId: string, count: number): Promise<string[]> {
  const { row } = await endpoints.create(orgId, { url: "https://example.com/", events: ["VIDEO_UPLOADED"], fields: [], description: null });
  const [endpoint] = await endpoints.sendableByIds([row.id]);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await deliveries.insertOne(endpoint!, "VIDEO_UPLOADED", { i }, { test: false, claim: null })).id);
  return ids;
}

test("claiming due work by share: skipped organizations are not looked at, the others get at most their room", async () => {
  const a = await pending("org_A", 6);
  const b = await pending("org_B", 3);
  const c = await pending("org_C", 4);
  const claim = { by: "dsp_1", until: Date.now() + 60_000 };
  const later = Date.now() + 1;

  const first = await deliveries.claimDue(later, 100, claim, { skipOrgs: ["org_A"], roomFor: (org) => (org === "org_C" ? 2 : 100) });
  expect(first.rows.map((r) => r.id).sort()).toEqual([...b, ...c.slice(0, 2)].sort());
  expect(first.rows.every((r) => r.claimedBy === "dsp_1")).toBe(true);

  // What was left (A's, and C's over its room) is still anyone's.
  const second = await deliveries.claimDue(later, 100, { by: "dsp_2", until: Date.now() + 60_000 });
  expect(second.rows.map((r) => r.id).sort()).toEqual([...a, ...c.slice(2)].sort());
});

test("an organization with no room claims nothing; the limit still says when there may be more", async () => {
  await pending("org_D", 3);
  const claim = { by: "dsp_3", until: Date.now() + 60_000 };
  const none = await deliveries.claimDue(Date.now() + 1, 3, claim, { roomFor: () => 0 });
  expect(none).toEqual({ rows: [], more: true });
  const all = await deliveries.claimDue(Date.now() + 1, 3, claim, { roomFor: () => 3 });
  expect(all.rows).toHaveLength(3);
});
