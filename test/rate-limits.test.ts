import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

// A two-second window stands in for the minute so Retry-After can be waited out in a test.
const env = { RATE_LIMIT_WINDOW_MS: "2000" };
let t: TestService | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

test("per key: over the limit gives 429 with Retry-After, and waiting that long is enough", async () => {
  t = await startTestService({ env });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 3 } }));
  for (let i = 0; i < 3; i++) expect((await t.api("/organization/")).status).toBe(200);
  const limited = await t.api("/organization/");
  expect(limited.status).toBe(429);
  const retryAfter = Number(limited.headers.get("retry-after"));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(2);
  expect(await limited.json()).toMatchObject({ success: false, error: { code: "RATE_LIMITED" }, meta: { timestamp: expect.any(String) } });
  await Bun.sleep(retryAfter * 1000);
  expect((await t.api("/organization/")).status).toBe(200);
});

test("per organization: POST /videos/ is counted across keys, and other routes are not affected", async () => {
  t = await startTestService({ env });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, limits: { ...s.limits, videosCreatePerMinute: 2 } }));
  const post = (key: string) => t!.api("/videos/", { method: "POST", json: { source_url: "notaurl" }, key });
  expect((await post(t.apiKey)).status).toBe(422);
  // Rotation: the organization's allowance does not reset with a new key.
  await t.service.orgs.revokeKey(t.orgId);
  const { apiKey: second } = await t.service.orgs.createKey(t.orgId);
  expect((await post(second)).status).toBe(422);
  const limited = await post(second);
  expect(limited.status).toBe(429);
  expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
  expect((await t.api("/organization/", { key: second })).status).toBe(200);
  // Another organization has its own allowance.
  const other = await t.service.orgs.createOrg("other");
  expect((await post(other.apiKey)).status).toBe(422);
});

test("windows survive a restart", async () => {
  t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "3600000" } });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 2 } }));
  for (let i = 0; i < 2; i++) expect((await t.api("/organization/")).status).toBe(200);
  await t.stop({ cleanup: false });
  t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "3600000" }, dataDir: t.dataDir, org: { orgId: t.orgId, apiKey: t.apiKey } });
  expect((await t.api("/organization/")).status).toBe(429);
});
