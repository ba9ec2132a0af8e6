import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { inArray } from "drizzle-orm";
import { webhookAttempts, webhookDeliveries } from "../src/db/schema/index.ts";
import { filterFields } from "../src/webhooks/fields-filter.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { newOrg, sharedWebhookService, WEBHOOK_ENV } from "./support/webhook-fixture.ts";
import { startWebhookReceiver } from "./support/webhook-receiver.ts";
import { failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * Issue 8: no organization can hurt another through the webhooks. The service
 * runs in this process, so a prototype polluted here is the one its routes see.
 */
const shared = sharedWebhookService();
const { receiver } = shared;

const POLLUTED = ["cursor", "x", "limit"];
afterEach(() => {
  // Only does anything when a test failed: keeps one failure from failing the rest.
  for (const key of POLLUTED) delete (Object.prototype as Record<string, unknown>)[key];
});

/** What every organization's list endpoints answer. */
async function listsOf(org: Awaited<ReturnType<typeof newOrg>>) {
  const out: Record<string, number> = {};
  for (const path of ["/videos/", "/livestreams/", "/webhooks/"]) out[path] = (await org.api(path)).status;
  return out;
}

const ALL_OK = { "/videos/": 200, "/livestreams/": 200, "/webhooks/": 200 };

describe("fields paths cannot pollute shared state", () => {
  test("a path with a __proto__, constructor or prototype segment is refused with 422 details.fields", async () => {
    const a = await newOrg(shared.t);
    const b = await newOrg(shared.t);
    const rx = receiver();
    for (const path of ["constructor.prototype.cursor", "__proto__.x", "video.__proto__.cursor", "prototype"]) {
      const res = await a.api("/webhooks/", { method: "POST", json: { url: rx.url, events: ["VIDEO_UPLOADED"], fields: ["video.id", path] } });
      expect([path, res.status]).toEqual([path, 422]);
      const body = await failed<Record<string, string>>(res);
      expect(body.error.code).toBe("VALIDATION_ERROR");
      expect(Object.keys(body.error.details)).toEqual(["fields"]);
      expect(body.error.details.fields).toContain(JSON.stringify(path));
    }
    expect((await ok(a.api("/webhooks/"), "listWebhooks")).data.items).toEqual([]);
    // An event fires for A; B's lists are untouched.
    await a.upload();
    expect(({} as Record<string, unknown>).cursor).toBeUndefined();
    expect(await listsOf(b)).toEqual(ALL_OK);
  });

  test("a hostile path stored before validation refused it selects nothing, and every organization's lists still answer 200", async () => {
    const a = await newOrg(shared.t);
    const b = await newOrg(shared.t);
    const rx = receiver();
    // Behind the API's back, as a row written by an older version would be.
    const { row } = await shared.t.service.webhooks.endpoints.create(a.orgId, {
      url: rx.url,
      events: ["VIDEO_UPLOADED"],
      fields: ["constructor.prototype.cursor", "__proto__.x", "video.id"],
      description: null,
    });
    const { ctx } = await a.upload();
    const [got] = await rx.waitFor(1);
    expect(JSON.parse(got!.body).data).toEqual({ video: { id: ctx.id } });
    await a.waitDeliveries(row.id, (list) => list[0]?.status === "DELIVERED");
    expect([({} as Record<string, unknown>).cursor, ({} as Record<string, unknown>).x]).toEqual([undefined, undefined]);
    expect(await listsOf(b)).toEqual(ALL_OK);
    expect(await listsOf(a)).toEqual(ALL_OK);
  });

  test("the filter fed hostile paths directly leaves another organization's GET /videos/ at 200", async () => {
    const b = await newOrg(shared.t);
    const payload = { video: { id: "vid_1", status: "COMPLETED" }, renditions: [{ quality: "360p" }] };
    for (const path of ["constructor.prototype.cursor", "__proto__.cursor", "video.constructor.prototype.limit", "renditions.__proto__.limit", "video.__proto__.x"]) {
      filterFields(payload, [path]);
      filterFields(payload, ["video.id", path]);
    }
    for (const key of POLLUTED) expect([key, (Object.prototype as Record<string, unknown>)[key]]).toEqual([key, undefined]);
    const res = await b.api("/videos/");
    expect(res.status).toBe(200);
    expect((await ok(res, "listVideos")).data).toEqual({ items: [], next_cursor: null });
    expect(await listsOf(b)).toEqual(ALL_OK);
  });
});

describe("shared pools: endpoints per organization", () => {
  test("an organization may have at most 20 endpoints: the 21st POST is 422 details.endpoints, others are unaffected", async () => {
    const a = await newOrg(shared.t);
    const b = await newOrg(shared.t);
    const body = (i: number) => ({ url: `https://127.0.0.1:1/hook/${i}`, events: ["VIDEO_UPLOADED"] });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await a.register(body(i))).id);
    const over = await a.api("/webhooks/", { method: "POST", json: body(20) });
    expect(over.status).toBe(422);
    const refused = await failed<Record<string, string>>(over);
    expect(refused).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR" } });
    expect(Object.keys(refused.error.details)).toEqual(["endpoints"]);
    expect(refused.error.details.endpoints).toContain("20");
    const listed = (await ok(a.api("/webhooks/?limit=100"), "listWebhooks")).data.items;
    expect(listed).toHaveLength(20);
    // Another organization registers as usual.
    expect((await b.api("/webhooks/", { method: "POST", json: body(0) })).status).toBe(201);
    // Deleting one makes room for one.
    expect((await a.api(`/webhooks/${ids[0]}/`, { method: "DELETE" })).status).toBe(200);
    expect((await a.api("/webhooks/", { method: "POST", json: body(21) })).status).toBe(201);
    expect((await a.api("/webhooks/", { method: "POST", json: body(22) })).status).toBe(422);
  });

  test("registrations racing each other cannot pass the cap together", async () => {
    const a = await newOrg(shared.t);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => a.api("/webhooks/", { method: "POST", json: { url: `https://127.0.0.1:1/race/${i}`, events: ["VIDEO_UPLOADED"] } })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(20);
    expect(statuses.filter((s) => s === 422)).toHaveLength(10);
    expect((await ok(a.api("/webhooks/?limit=100"), "listWebhooks")).data.items).toHaveLength(20);
  });
});

describe("shared pools: deliveries in flight per organization", () => {
  let svc: TestService;
  // Long enough that nothing of A's times out while the test looks; the assertions are about order, not time.
  const TIMEOUT_MS = 8000;
  const hanging = startWebhookReceiver(() => "hang");
  const healthy = startWebhookReceiver();
  beforeAll(async () => {
    svc = await startTestService({ env: { ...WEBHOOK_ENV, WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) } });
  });
  afterAll(async () => {
    hanging.stop(); // answers what hangs, so the service stops at once
    healthy.stop();
    await svc.stop();
  });

  test("an organization's 300 deliveries to hanging receivers hold 32 requests; another organization's all arrive while they still hang", async () => {
    const a = await newOrg(svc);
    const b = await newOrg(svc);
    const aEndpoints: string[] = [];
    for (let i = 0; i < 20; i++) aEndpoints.push((await a.register({ url: `${hanging.url}/${i}`, events: ["VIDEO_UPLOADED"] })).id);
    await b.register({ url: healthy.url, events: ["VIDEO_UPLOADED"] });
    for (let i = 0; i < 15; i++) await a.upload(); // 15 events x 20 endpoints = 300 deliveries that hang
    await hanging.waitFor(32, 10_000);
    expect(svc.service.webhooks.dispatcher.orgStats(a.orgId).inflight).toBe(32);

    for (let i = 0; i < 5; i++) await b.upload();
    // Only the receivers' own counters from here on: the test shares this process's fetch pool with the service.
    await healthy.waitFor(5, 30_000);
    await waitFor(async () => svc.service.webhooks.dispatcher.orgStats(b.orgId).inflight === 0, { timeoutMs: 30_000, intervalMs: 10, what: "B's attempts to finish" });
    const aDeliveries = await svc.service.database.db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(inArray(webhookDeliveries.endpointId, aEndpoints));
    expect(aDeliveries).toHaveLength(300);
    const aAttempts = await svc.service.database.db
      .select()
      .from(webhookAttempts)
      .where(
        inArray(
          webhookAttempts.deliveryId,
          aDeliveries.map((d) => d.id),
        ),
      );
    // B got everything before any of A's first attempts had even timed out, and A never had more than its 32 out.
    expect(aAttempts).toHaveLength(0);
    expect(hanging.received).toHaveLength(32);
    expect(healthy.received.map((r) => JSON.parse(r.body).event)).toEqual(Array(5).fill("VIDEO_UPLOADED"));

    // When A's attempts time out, its freed slots go to its next deliveries: still never past 32.
    await waitFor(async () => hanging.received.length > 32, { timeoutMs: TIMEOUT_MS + 10_000, intervalMs: 50, what: "A's next attempts" });
    expect(svc.service.webhooks.dispatcher.orgStats(a.orgId).inflight).toBeLessThanOrEqual(32);
  }, 60_000);
});
