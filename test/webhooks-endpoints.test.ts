import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { webhookEndpoints } from "../src/db/schema/index.ts";
import { randomToken } from "../src/ids.ts";
import { ALL_PERMISSIONS, defaultOrgSettings } from "../src/orgs/org-settings.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { newOrg, sharedWebhookService, WEBHOOK_ENV } from "./support/webhook-fixture.ts";
import { answer, failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

const shared = sharedWebhookService();
const { receiver } = shared;

describe("endpoints", () => {
  test("create answers 201 with the record and the signing secret, shown once and stored sealed", async () => {
    const org = await newOrg(shared.t);
    const rx = receiver();
    const res = await org.api("/webhooks/", { method: "POST", json: { url: rx.url, events: ["VIDEO_UPLOADED", "LIVESTREAM_STARTED"], fields: ["video.id"], description: "Main receiver" } });
    expect(res.status).toBe(201);
    const body = await ok(res, "createWebhook");
    expect(body.success).toBe(true);
    expect(Object.keys(body.data.endpoint).sort()).toEqual(["created_at", "description", "events", "fields", "id", "url"]);
    expect(body.data.endpoint).toMatchObject({ url: rx.url, events: ["VIDEO_UPLOADED", "LIVESTREAM_STARTED"], fields: ["video.id"], description: "Main receiver" });
    expect(body.data.endpoint.id).toMatch(/^whk_[A-Za-z0-9]{20}$/);
    expect(body.data.endpoint.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const secret: string = body.data.signing_secret;
    expect(secret).toMatch(/^whsec_/);

    const list = await org.api("/webhooks/");
    const listText = await list.text();
    expect(list.status).toBe(200);
    expect(listText).not.toContain(secret);
    expect(JSON.parse(listText).data).toEqual({ items: [body.data.endpoint], next_cursor: null });
    const one = await org.api(`/webhooks/${body.data.endpoint.id}/`);
    const oneText = await one.text();
    expect(oneText).not.toContain(secret);
    expect(JSON.parse(oneText).data.endpoint).toEqual(body.data.endpoint);

    const [row] = await shared.t.service.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, body.data.endpoint.id));
    expect(row!.sealedSecret).not.toContain(secret.slice(6));
    expect(JSON.stringify(row)).not.toContain(secret);
  });

  test("the list pages newest first with a cursor", async () => {
    const org = await newOrg(shared.t);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await org.register({ url: `https://127.0.0.1:1/${i}`, events: ["VIDEO_UPLOADED"] })).id);
      await Bun.sleep(2); // distinct created_at, so "newest first" is one order
    }
    const first = await ok(org.api("/webhooks/?limit=2"), "listWebhooks");
    expect(first.data.items.map((e: any) => e.id)).toEqual([ids[2], ids[1]]);
    const second = await ok(org.api(`/webhooks/?limit=2&cursor=${first.data.next_cursor}`), "listWebhooks");
    expect(second.data).toEqual({ items: [expect.objectContaining({ id: ids[0] })], next_cursor: null });
    for (const bad of ["0", "101", "abc"]) {
      const res = await org.api(`/webhooks/?limit=${bad}`);
      expect(res.status).toBe(422);
      expect((await failed(res)).error.details).toHaveProperty("limit");
    }
  });

  test("validation of 2.3: http, unknown or no events, bad dot-paths, description over 200 characters", async () => {
    const org = await newOrg(shared.t);
    const post = async (json: unknown) => {
      const res = await org.api("/webhooks/", { method: "POST", json });
      return { status: res.status, body: await answer(res, "createWebhook") };
    };
    const http = await post({ url: "http://example.com/hook", events: ["VIDEO_UPLOADED"] });
    expect(http.status).toBe(422);
    expect(http.body).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR", details: { url: expect.stringContaining("https") } } });

    const unknown = await post({ url: "https://example.com/hook", events: ["VIDEO_UPLOADED", "VIDEO_DELETED"] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details.events).toContain("VIDEO_DELETED");
    expect((await post({ url: "https://example.com/hook", events: [] })).body.error.details).toHaveProperty("events");
    expect((await post({ url: "https://example.com/hook" })).status).toBe(422);
    expect((await post({ url: "https://example.com/hook", events: ["VIDEO_UPLOADED"], fields: ["video.", "video id"] })).body.error.details).toHaveProperty("fields");

    const long = await post({ url: "https://example.com/hook", events: ["VIDEO_UPLOADED"], description: "d".repeat(201) });
    expect(long.status).toBe(422);
    expect(long.body.error.details).toEqual({ description: expect.stringContaining("200") });
    expect((await post({ url: "https://example.com/hook", events: ["VIDEO_UPLOADED"], description: "d".repeat(200) })).status).toBe(201);
    expect((await ok(org.api("/webhooks/"), "listWebhooks")).data.items).toHaveLength(1);
  });

  test("another organization's endpoint answers exactly like a missing one", async () => {
    const owner = await newOrg(shared.t);
    const stranger = await newOrg(shared.t);
    const { id } = await owner.register({ url: "https://127.0.0.1:1/x", events: ["VIDEO_UPLOADED"] });
    const missing = `whk_${randomToken(20)}`;
    const shape = async (res: Response) => {
      const body = await answer(res, "getWebhook");
      delete body.meta;
      return { status: res.status, body };
    };
    for (const [method, path, json] of [
      ["GET", "/", undefined],
      ["DELETE", "/", undefined],
      ["GET", "/deliveries/", undefined],
      ["POST", `/deliveries/dlv_${randomToken(20)}/retry/`, undefined],
      ["POST", "/test/", { event: "VIDEO_UPLOADED" }],
    ] as const) {
      const theirs = await shape(await stranger.api(`/webhooks/${id}${path}`, { method, json }));
      const none = await shape(await stranger.api(`/webhooks/${missing}${path}`, { method, json }));
      expect(theirs).toEqual(none);
      expect(theirs.status).toBe(404);
      expect(theirs.body.error.code).toBe("NOT_FOUND");
    }
    expect((await ok(stranger.api("/webhooks/"), "listWebhooks")).data.items).toEqual([]);
    expect((await owner.api(`/webhooks/${id}/`)).status).toBe(200);
  });

  test("without webhooks.manage: 403 PERMISSION_DENIED listing it", async () => {
    const org = await newOrg(shared.t, { ...defaultOrgSettings(), permissions: ALL_PERMISSIONS.filter((p) => p !== "webhooks.manage") });
    const res = await org.api("/webhooks/", { method: "POST", json: { url: "http://nope", events: [] } });
    expect(res.status).toBe(403);
    expect((await failed<string[]>(res)).error).toEqual({ code: "PERMISSION_DENIED", details: ["webhooks.manage"] });
    expect((await org.api("/webhooks/")).status).toBe(403);
  });

  test("the routes are documented in OpenAPI", async () => {
    // Untyped on purpose: the OpenAPI document itself (not an API answer), walked by path and key; the test asserts each step it reads.
    const doc = (await (await fetch(`${shared.t.base}/openapi/json`)).json()) as any;
    const paths = Object.keys(doc.paths);
    for (const p of [
      "/api/public/v1/webhooks/",
      "/api/public/v1/webhooks/{endpoint_id}/",
      "/api/public/v1/webhooks/{endpoint_id}/deliveries/",
      "/api/public/v1/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry/",
      "/api/public/v1/webhooks/{endpoint_id}/test/",
    ]) {
      expect(paths).toContain(p);
    }
    expect(doc.paths["/api/public/v1/webhooks/"].post.description).toContain("X-Service-Signature");
  });
});

describe("outbound safety", () => {
  let strict: TestService;
  beforeAll(async () => {
    strict = await startTestService({ env: { ...WEBHOOK_ENV, ALLOW_PRIVATE_NETWORK: "0" } });
  });
  afterAll(() => strict.stop());

  test("private, loopback and link-local URLs are refused at registration", async () => {
    const org = await newOrg(strict);
    for (const url of ["https://127.0.0.1:8443/hook", "https://localhost/hook", "https://[::1]/hook", "https://169.254.169.254/latest", "https://10.0.0.8/", "https://192.168.1.1/"]) {
      const res = await org.api("/webhooks/", { method: "POST", json: { url, events: ["VIDEO_UPLOADED"] } });
      expect([url, res.status]).toEqual([url, 422]);
      expect((await failed(res)).error).toEqual({ code: "VALIDATION_ERROR", details: { url: expect.stringContaining("private") } });
    }
  });

  test("and again at delivery time (an address that turned private is never called)", async () => {
    const org = await newOrg(strict);
    const rx = receiver();
    // Registered behind the API's back, as if its DNS answer changed after registration.
    const { row } = await strict.service.webhooks.endpoints.create(org.orgId, { url: rx.url, events: ["VIDEO_UPLOADED"], fields: [], description: null });
    await org.upload();
    const [delivery] = await org.waitDeliveries(row.id, (list) => list[0]?.attempts.length >= 1);
    expect(delivery.attempts[0]).toMatchObject({ status_code: null, error: expect.stringContaining("Refusing") });
    expect(rx.received).toHaveLength(0);
  });
});
