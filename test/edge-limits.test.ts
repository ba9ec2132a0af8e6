import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed } from "./support/api.ts";

setDefaultTimeout(120_000);

let t: TestService | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

test("503 NO_SLOTS_AVAILABLE carries Retry-After: 30", async () => {
  t = await startTestService({ env: { LIVE_SLOTS: "1" } });
  expect((await t.api("/livestreams/", { method: "POST", json: { title: "one" } })).status).toBe(201);
  const full = await t.api("/livestreams/", { method: "POST", json: { title: "two" } });
  expect(full.status).toBe(503);
  expect(full.headers.get("retry-after")).toBe("30");
  expect(await full.json()).toMatchObject({ success: false, error: { code: "NO_SLOTS_AVAILABLE" }, meta: { timestamp: expect.any(String) } });
});

test("502 TRANSCODE_QUEUE_FAILED carries Retry-After: 10", async () => {
  t = await startTestService({ env: { TRANSCODE_QUEUE_LIMIT: "0" } });
  const refused = await t.api("/videos/", { method: "POST", json: { source_url: "http://127.0.0.1:9/a.mp4" } });
  expect(refused.status).toBe(502);
  expect(refused.headers.get("retry-after")).toBe("10");
  expect(await refused.json()).toMatchObject({ success: false, error: { code: "TRANSCODE_QUEUE_FAILED" } });
  // The OpenAPI document says so too.
  // Untyped on purpose: the OpenAPI document itself (not an API answer), walked by path and key; the test asserts each step it reads.
  const doc = (await (await fetch(`${t.base}/openapi/json`)).json()) as any;
  expect(doc.paths["/api/public/v1/videos/"].post.responses["502"].headers["Retry-After"]).toBeDefined();
  expect(doc.paths["/api/public/v1/livestreams/"].post.responses["503"].headers["Retry-After"]).toBeDefined();
});

test("POST /livestreams/schedule/ counts in the same 10/min per-organization bucket as POST /livestreams/", async () => {
  t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "3600000" } });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, limits: { ...s.limits, livestreamsCreatePerMinute: 3 } }));
  const at = () => new Date(Date.now() + 3_600_000).toISOString();
  const schedule = () => t!.api("/livestreams/schedule/", { method: "POST", json: { title: "booked", scheduled_at: at() } });
  const create = () => t!.api("/livestreams/", { method: "POST", json: { title: "now" } });
  expect((await schedule()).status).toBe(201);
  expect((await schedule()).status).toBe(201);
  expect((await create()).status).toBe(201);
  // The bucket is spent, whichever route asks next.
  const limited = await schedule();
  expect(limited.status).toBe(429);
  expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
  expect((await failed(limited)).error.code).toBe("RATE_LIMITED");
  expect((await create()).status).toBe(429);
  // Reads are not counted in it.
  expect((await t.api("/livestreams/")).status).toBe(200);
  // Another organization has its own bucket.
  const other = await t.service.orgs.createOrg("other");
  expect((await t.api("/livestreams/schedule/", { method: "POST", json: { title: "b", scheduled_at: at() }, key: other.apiKey })).status).toBe(201);
});
