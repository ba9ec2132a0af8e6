import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { videoInput } from "../machines/test-contexts.ts";
import type { VideoContext } from "../machines/video-payload.ts";
import { videoData } from "../machines/video-payload.ts";
import { loadConfig } from "../src/config.ts";
import { webhookDeliveries, webhookEndpoints } from "../src/db/schema/index.ts";
import { newId, randomToken } from "../src/ids.ts";
import { createLogger } from "../src/log.ts";
import { ALL_PERMISSIONS, defaultOrgSettings, type OrgSettings } from "../src/orgs/org-settings.ts";
import { createService } from "../src/service.ts";
import { verifyWebhook } from "../src/webhooks/verify-webhook.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { startWebhookReceiver, TEST_CA_FILE, type WebhookReceiver } from "./support/webhook-receiver.ts";

// WEBHOOK_LEASE_MS: a killed process's deliveries are taken over within about two leases (default 30 s).
const ENV = { WEBHOOK_CA_FILE: TEST_CA_FILE, WEBHOOK_RETRY_SCHEDULE: "0.2,0.2,0.2", WEBHOOK_TIMEOUT_MS: "300", WEBHOOK_LEASE_MS: "1000" };

/** A fresh upload of `orgId`: its creation writes VIDEO_UPLOADED to the outbox. */
const uploadInput = (orgId: string): VideoContext =>
  videoInput({ id: newId("vid"), orgId, title: `Clip ${randomToken(4)} é`, sourceUrl: `https://example.com/${randomToken(8)}.mp4`, createdAt: new Date().toISOString() });

interface Org {
  orgId: string;
  apiKey: string;
  api: TestService["api"];
  /** Registers an endpoint and returns its id and secret. */
  register(body: Record<string, unknown>): Promise<{ id: string; secret: string }>;
  /** Creates a video actor: its VIDEO_UPLOADED lands in the outbox. */
  upload(): Promise<{ ctx: VideoContext; createdAt: number }>;
  deliveries(endpointId: string): Promise<any[]>;
  /** Polls the endpoint's deliveries until `ready(list)` holds. */
  waitDeliveries(endpointId: string, ready: (list: any[]) => boolean, timeoutMs?: number): Promise<any[]>;
}

async function newOrg(t: TestService, settings?: OrgSettings): Promise<Org> {
  const { org, apiKey } = await t.service.orgs.createOrg(`org-${randomToken(4)}`, settings);
  const api: TestService["api"] = (path, init = {}) => t.api(path, { ...init, key: init.key === undefined ? apiKey : init.key });
  const handle: Org = {
    orgId: org.id,
    apiKey,
    api,
    async register(body) {
      const res = await api("/webhooks/", { method: "POST", json: body });
      const json = (await res.json()) as any;
      if (res.status !== 201) throw new Error(`register: ${res.status} ${JSON.stringify(json)}`);
      return { id: json.data.endpoint.id, secret: json.data.signing_secret };
    },
    async upload() {
      const ctx = uploadInput(org.id);
      const result = await t.service.runtime.create("video", ctx);
      return { ctx, createdAt: result.record.createdAt };
    },
    async deliveries(endpointId) {
      const res = await api(`/webhooks/${endpointId}/deliveries/`);
      expect(res.status).toBe(200);
      return ((await res.json()) as any).data.items;
    },
    waitDeliveries(endpointId, ready, timeoutMs = 5000) {
      return waitFor(async () => {
        const list = await handle.deliveries(endpointId);
        return ready(list) && list;
      }, { timeoutMs, intervalMs: 20, what: `deliveries of ${endpointId}` });
    },
  };
  return handle;
}

/** A secret sealed under another server key (a fresh service's). */
async function sealedUnderAnotherKey(): Promise<string> {
  const other = await startTestService({ listen: false });
  try {
    const { row } = await other.service.webhooks.endpoints.create("handlex", { url: "https://example.com/", events: ["VIDEO_UPLOADED"], fields: [], description: null });
    return row.sealedSecret;
  } finally {
    await other.stop();
  }
}

const statusOf = async (t: TestService, deliveryId: string) =>
  (await t.service.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId)))[0]?.status;

let t: TestService;
const receivers: WebhookReceiver[] = [];
function receiver(...args: Parameters<typeof startWebhookReceiver>): WebhookReceiver {
  const r = startWebhookReceiver(...args);
  receivers.push(r);
  return r;
}

beforeAll(async () => {
  t = await startTestService({ env: ENV });
});
afterAll(async () => {
  await t.stop();
  for (const r of receivers) r.stop();
});

describe("endpoints", () => {
  test("create answers 201 with the record and the signing secret, shown once and stored sealed", async () => {
    const org = await newOrg(t);
    const rx = receiver();
    const res = await org.api("/webhooks/", { method: "POST", json: { url: rx.url, events: ["VIDEO_UPLOADED", "LIVESTREAM_STARTED"], fields: ["video.id"], description: "Main receiver" } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
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

    const [row] = await t.service.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, body.data.endpoint.id));
    expect(row!.sealedSecret).not.toContain(secret.slice(6));
    expect(JSON.stringify(row)).not.toContain(secret);
  });

  test("the list pages newest first with a cursor", async () => {
    const org = await newOrg(t);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await org.register({ url: `https://127.0.0.1:1/${i}`, events: ["VIDEO_UPLOADED"] })).id);
      await Bun.sleep(2); // distinct created_at, so "newest first" is one order
    }
    const first = (await (await org.api("/webhooks/?limit=2")).json()) as any;
    expect(first.data.items.map((e: any) => e.id)).toEqual([ids[2], ids[1]]);
    const second = (await (await org.api(`/webhooks/?limit=2&cursor=${first.data.next_cursor}`)).json()) as any;
    expect(second.data).toEqual({ items: [expect.objectContaining({ id: ids[0] })], next_cursor: null });
    for (const bad of ["0", "101", "abc"]) {
      const res = await org.api(`/webhooks/?limit=${bad}`);
      expect(res.status).toBe(422);
      expect(((await res.json()) as any).error.details).toHaveProperty("limit");
    }
  });

  test("validation of 2.3: http, unknown or no events, bad dot-paths, description over 200 characters", async () => {
    const org = await newOrg(t);
    const post = async (json: unknown) => {
      const res = await org.api("/webhooks/", { method: "POST", json });
      return { status: res.status, body: (await res.json()) as any };
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
    expect(((await (await org.api("/webhooks/")).json()) as any).data.items).toHaveLength(1);
  });

  test("another organization's endpoint answers exactly like a missing one", async () => {
    const owner = await newOrg(t);
    const stranger = await newOrg(t);
    const { id } = await owner.register({ url: "https://127.0.0.1:1/x", events: ["VIDEO_UPLOADED"] });
    const missing = `whk_${randomToken(20)}`;
    const shape = async (res: Response) => {
      const body = (await res.json()) as any;
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
    expect(((await (await stranger.api("/webhooks/")).json()) as any).data.items).toEqual([]);
    expect((await owner.api(`/webhooks/${id}/`)).status).toBe(200);
  });

  test("without webhooks.manage: 403 PERMISSION_DENIED listing it", async () => {
    const org = await newOrg(t, { ...defaultOrgSettings(), permissions: ALL_PERMISSIONS.filter((p) => p !== "webhooks.manage") });
    const res = await org.api("/webhooks/", { method: "POST", json: { url: "http://nope", events: [] } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error).toEqual({ code: "PERMISSION_DENIED", details: ["webhooks.manage"] });
    expect((await org.api("/webhooks/")).status).toBe(403);
  });

  test("the routes are documented in OpenAPI", async () => {
    const doc = (await (await fetch(`${t.base}/openapi/json`)).json()) as any;
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

describe("deliveries", () => {
  test("an outbox event arrives signed, with the spec headers and the exact body", async () => {
    const org = await newOrg(t);
    const rx = receiver();
    const { id, secret } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    const { ctx, createdAt } = await org.upload();
    const [got] = await rx.waitFor(1);
    const expectedBody = JSON.stringify({ event: "VIDEO_UPLOADED", created_at: new Date(createdAt).toISOString(), data: videoData(ctx, "TRANSCODING") });
    expect(got!.body).toBe(expectedBody);
    expect(got!.headers.get("content-type")).toBe("application/json");
    expect(got!.headers.get("x-service-event")).toBe("VIDEO_UPLOADED");
    const deliveryId = got!.headers.get("x-service-delivery")!;
    expect(deliveryId).toMatch(/^dlv_[A-Za-z0-9]{20}$/);
    const signature = got!.headers.get("x-service-signature")!;
    const [, ts, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature)!;
    expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(5);
    expect(v1).toBe(createHmac("sha256", secret).update(`${ts}.${got!.body}`).digest("hex"));
    expect(verifyWebhook(secret, signature, got!.body)).toBe(true);
    expect(verifyWebhook(secret, signature, got!.body.replace("TRANSCODING", "COMPLETED"))).toBe(false);

    const items = await org.waitDeliveries(id, (list) => list[0]?.status === "DELIVERED");
    expect(items).toEqual([
      {
        id: deliveryId,
        event: "VIDEO_UPLOADED",
        status: "DELIVERED",
        test: false,
        created_at: expect.any(String),
        next_attempt_at: null,
        attempts: [{ started_at: expect.any(String), status_code: 204, duration_ms: expect.any(Number), error: null, manual: false }],
      },
    ]);
  });

  test("only subscribed endpoints of the event's organization get it; `fields` trims data at build time", async () => {
    const org = await newOrg(t);
    const other = await newOrg(t);
    const rx = receiver();
    await org.register({ url: `${rx.url}/trimmed`, events: ["VIDEO_UPLOADED"], fields: ["video.id", "video.status"] });
    await org.register({ url: `${rx.url}/unsubscribed`, events: ["VIDEO_TRANSCODING_COMPLETED"] });
    await other.register({ url: `${rx.url}/other-org`, events: ["VIDEO_UPLOADED"] });
    const { ctx } = await org.upload();
    const [got] = await rx.waitFor(1);
    await Bun.sleep(300);
    expect(rx.received.map((r) => r.path)).toEqual(["/hooks/trimmed"]);
    expect(JSON.parse(got!.body).data).toEqual({ video: { id: ctx.id, status: "TRANSCODING" } });
  });

  test("a 500 is retried with the same delivery id and bytes until a 2xx", async () => {
    const org = await newOrg(t);
    const rx = receiver((_, nth) => new Response("nope", { status: nth <= 2 ? 500 : 200 }));
    const { id, secret } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    const got = await rx.waitFor(3);
    expect(new Set(got.map((r) => r.headers.get("x-service-delivery"))).size).toBe(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    for (const r of got) expect(verifyWebhook(secret, r.headers.get("x-service-signature"), r.body)).toBe(true);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(170); // 0.2 s - 10% jitter
    const [delivery] = await org.waitDeliveries(id, (list) => list[0]?.status === "DELIVERED");
    expect(delivery.attempts.map((a: any) => [a.status_code, a.error])).toEqual([
      [500, "HTTP 500"],
      [500, "HTTP 500"],
      [200, null],
    ]);
    await Bun.sleep(400);
    expect(rx.received).toHaveLength(3);
  });

  test("a receiver that never answers times out, is retried, then abandoned after the last retry", async () => {
    const org = await newOrg(t);
    const rx = receiver(() => "hang");
    const { id } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    const [delivery] = await org.waitDeliveries(id, (list) => list[0]?.status === "ABANDONED", 8000);
    expect(delivery.attempts).toHaveLength(4); // the first attempt and the 3 retries of the schedule
    for (const a of delivery.attempts) {
      expect(a.status_code).toBeNull();
      expect(a.error).toBe("No response within 300 ms");
      expect(a.duration_ms).toBeGreaterThanOrEqual(290);
    }
    expect(delivery.next_attempt_at).toBeNull();
    expect(rx.received).toHaveLength(4);
    expect(new Set(rx.received.map((r) => r.body)).size).toBe(1);
    await Bun.sleep(500);
    expect(rx.received).toHaveLength(4);
  });

  test("redirects are not followed: a 3xx is a failure", async () => {
    const org = await newOrg(t);
    const rx = receiver((r) => (r.path === "/hooks/moved" ? new Response(null, { status: 307, headers: { location: "/elsewhere" } }) : new Response("ok")));
    const { id } = await org.register({ url: `${rx.url}/moved`, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    const [delivery] = await org.waitDeliveries(id, (list) => list[0]?.attempts.length >= 2);
    expect(delivery.attempts[0]).toMatchObject({ status_code: 307, error: expect.stringContaining("redirects are not followed") });
    expect(rx.received.every((r) => r.path === "/hooks/moved")).toBe(true);
  });

  test("manual re-send: same id and bytes, now, even after abandonment", async () => {
    const org = await newOrg(t);
    const rx = receiver(() => new Response(null, { status: 503 }));
    const { id } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    const [abandoned] = await org.waitDeliveries(id, (list) => list[0]?.status === "ABANDONED", 8000);
    rx.reply = () => new Response("thanks");
    const res = await org.api(`/webhooks/${id}/deliveries/${abandoned.id}/retry/`, { method: "POST" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.data.attempt).toMatchObject({ status_code: 200, error: null });
    expect(body.data.delivery).toMatchObject({ id: abandoned.id, status: "DELIVERED" });
    expect(body.data.delivery.attempts).toHaveLength(5);
    expect(body.data.delivery.attempts[4]).toMatchObject({ status_code: 200, manual: true });
    const last = rx.received.at(-1)!;
    expect(last.headers.get("x-service-delivery")).toBe(abandoned.id);
    expect(last.body).toBe(rx.received[0]!.body);
    const unknown = await org.api(`/webhooks/${id}/deliveries/dlv_${randomToken(20)}/retry/`, { method: "POST" });
    expect(unknown.status).toBe(404);
  });

  test("test event: a realistic sample through the same path, trimmed, listed as a test", async () => {
    const org = await newOrg(t);
    const rx = receiver();
    const { id, secret } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"], fields: ["video.id", "video.status", "renditions.quality"] });
    const res = await org.api(`/webhooks/${id}/test/`, { method: "POST", json: { event: "VIDEO_TRANSCODING_COMPLETED" } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
    expect(body.data.delivery).toMatchObject({ event: "VIDEO_TRANSCODING_COMPLETED", status: "DELIVERED", test: true });
    expect(body.data.attempt.status_code).toBe(204);
    const [got] = rx.received;
    expect(got!.headers.get("x-service-delivery")).toBe(body.data.delivery.id);
    expect(got!.headers.get("x-service-event")).toBe("VIDEO_TRANSCODING_COMPLETED");
    expect(verifyWebhook(secret, got!.headers.get("x-service-signature"), got!.body)).toBe(true);
    const envelope = JSON.parse(got!.body);
    expect(envelope.event).toBe("VIDEO_TRANSCODING_COMPLETED");
    expect(envelope.data).toEqual({ video: { id: expect.stringMatching(/^vid_/), status: "COMPLETED" }, renditions: [{ quality: "360p" }, { quality: "720p" }] });

    const stream = await org.api(`/webhooks/${id}/test/`, { method: "POST", json: { event: "LIVESTREAM_RECORDING_READY" } });
    expect(stream.status).toBe(201);
    const bad = await org.api(`/webhooks/${id}/test/`, { method: "POST", json: { event: "NOPE" } });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as any).error.details).toHaveProperty("event");
  });

  test("a signing secret that no longer opens fails that endpoint's attempts, not the others'", async () => {
    const org = await newOrg(t);
    const rx = receiver();
    const broken = await org.register({ url: `${rx.url}/broken`, events: ["VIDEO_UPLOADED"] });
    await org.register({ url: `${rx.url}/fine`, events: ["VIDEO_UPLOADED"] });
    // As if SECRET_KEY had changed: the sealed value is from another key.
    const foreign = await sealedUnderAnotherKey();
    await t.service.database.write((tx) => tx.update(webhookEndpoints).set({ sealedSecret: foreign }).where(eq(webhookEndpoints.id, broken.id)));
    await org.upload();
    await rx.waitFor(1);
    const [delivery] = await org.waitDeliveries(broken.id, (list) => list[0]?.attempts.length >= 1);
    expect(delivery.attempts[0]).toMatchObject({ status_code: null, error: expect.stringContaining("signing secret") });
    expect(rx.received.map((r) => r.path)).toEqual(["/hooks/fine"]);
  });

  test("a slow endpoint does not delay deliveries to others", async () => {
    const org = await newOrg(t);
    const rx = receiver((r) => (r.path === "/hooks/dead" ? "hang" : new Response(null, { status: 204 })));
    await org.register({ url: `${rx.url}/dead`, events: ["VIDEO_UPLOADED"] });
    await org.register({ url: `${rx.url}/alive`, events: ["VIDEO_UPLOADED"] });
    const started = Date.now();
    await Promise.all(Array.from({ length: 60 }, () => org.upload()));
    await waitFor(async () => rx.received.filter((r) => r.path === "/hooks/alive").length === 60, { timeoutMs: 3000, intervalMs: 10, what: "60 deliveries to the live endpoint" });
    // The dead one's 16 slots are stuck for the whole 300 ms timeout; the live one got everything before that.
    expect(Date.now() - started).toBeLessThan(1500);
  });
});

describe("removal", () => {
  let slow: TestService;
  beforeAll(async () => {
    // A retry 1 s out leaves time to delete while its timer is armed.
    slow = await startTestService({ env: { ...ENV, WEBHOOK_RETRY_SCHEDULE: "1,1" } });
  });
  afterAll(() => slow.stop());

  test("deleting an endpoint drops its queued retries, including an armed timer", async () => {
    const org = await newOrg(slow);
    const rx = receiver(() => new Response(null, { status: 500 }));
    const { id } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    await org.upload();
    const pending = await org.waitDeliveries(id, (list) => list.length === 2 && list.every((d: any) => d.status === "PENDING" && d.attempts.length === 1), 3000);
    expect(pending[0].next_attempt_at).not.toBeNull();
    const res = await org.api(`/webhooks/${id}/`, { method: "DELETE" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).data).toEqual({ id, deleted: true, dropped_deliveries: 2 });
    await Bun.sleep(1500);
    expect(rx.received).toHaveLength(2);
    for (const d of pending) expect(await statusOf(slow, d.id)).toBe("dropped");
    expect((await org.api(`/webhooks/${id}/`)).status).toBe(404);
    expect((await org.api(`/webhooks/${id}/`, { method: "DELETE" })).status).toBe(404);
    // A new event for the organization reaches nobody.
    await org.upload();
    await Bun.sleep(300);
    expect(rx.received).toHaveLength(2);
  });
});

describe("crash safety", () => {
  test("kill -9 between outbox write and fan-out, and between POST and recording: everything arrives, same id and bytes", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-crash-"));
    const rx = receiver(() => "hang");
    // 1. The event is written while no dispatcher runs (outbox row, no delivery yet).
    const first = await startTestService({ dataDir, env: ENV, listen: false });
    const org = await newOrg(first);
    const { id, secret } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    const { ctx } = await org.upload();
    await first.stop({ cleanup: false });

    // 2. A process fans it out and posts; it is killed while the receiver holds the request.
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "support/webhook-crash-child.ts"), dataDir, org.orgId, org.apiKey, JSON.stringify({ ...ENV, WEBHOOK_TIMEOUT_MS: "30000" })], {
      stdout: "pipe",
      stderr: "inherit",
    });
    const [inFlight] = await rx.waitFor(1, 15_000);
    child.kill(9);
    await child.exited;

    // 3. After a restart the same delivery is sent again, same id, same bytes.
    rx.reply = () => new Response(null, { status: 200 });
    const again = await startTestService({ dataDir, env: ENV, org: { orgId: org.orgId, apiKey: org.apiKey } });
    try {
      const got = await rx.waitFor(2);
      expect(got[1]!.headers.get("x-service-delivery")).toBe(inFlight!.headers.get("x-service-delivery"));
      expect(got[1]!.body).toBe(inFlight!.body);
      expect(JSON.parse(got[1]!.body).data.video.id).toBe(ctx.id);
      expect(verifyWebhook(secret, got[1]!.headers.get("x-service-signature"), got[1]!.body)).toBe(true);
      const api: TestService["api"] = (path, init = {}) => again.api(path, { ...init, key: org.apiKey });
      const items = await waitFor(async () => {
        const list = ((await (await api(`/webhooks/${id}/deliveries/`)).json()) as any).data.items;
        return list[0]?.status === "DELIVERED" && list;
      }, { timeoutMs: 5000 });
      expect(items).toHaveLength(1);
    } finally {
      await again.stop({ cleanup: false });
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("service.stop() mid-delivery then a restart on the same data: the retry goes out with the same id", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-restart-"));
    const rx = receiver(() => "hang");
    const one = await startTestService({ dataDir, env: ENV });
    const org = await newOrg(one);
    await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    const [inFlight] = await rx.waitFor(1);
    await one.stop({ cleanup: false });
    rx.reply = () => new Response(null, { status: 204 });
    const two = await startTestService({ dataDir, env: ENV, org: { orgId: org.orgId, apiKey: org.apiKey } });
    try {
      const got = await rx.waitFor(2);
      expect(got[1]!.headers.get("x-service-delivery")).toBe(inFlight!.headers.get("x-service-delivery"));
      expect(got[1]!.body).toBe(inFlight!.body);
    } finally {
      await two.stop({ cleanup: false });
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("leases", () => {
  test("a lease left by a dead process is taken over once it runs out, a live one is left alone, a manual re-send ignores both", async () => {
    const org = await newOrg(t);
    const rx = receiver();
    const { id } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    const now = Date.now();
    const row = (n: number, claimedBy: string, leaseUntil: number) => ({
      id: newId("dlv"),
      endpointId: id,
      orgId: org.orgId,
      eventId: newId("evt"),
      event: "VIDEO_UPLOADED",
      body: JSON.stringify({ event: "VIDEO_UPLOADED", created_at: new Date(now).toISOString(), data: { n } }),
      test: false,
      status: "pending",
      attempts: 0,
      nextAttemptAt: now - 1000,
      claimedBy,
      leaseUntil,
      createdAt: now,
      updatedAt: now,
    });
    const dead = row(1, "dsp_killed", now - 1); // its process died mid-attempt; the lease ran out
    const live = row(2, "dsp_elsewhere", now + 2500); // another process holds it, as far as anyone can tell
    const held = row(3, "dsp_elsewhere", now + 60_000);
    await t.service.database.write((tx) => tx.insert(webhookDeliveries).values([dead, live, held]));

    const res = await org.api(`/webhooks/${id}/deliveries/${held.id}/retry/`, { method: "POST" });
    expect(((await res.json()) as any).data.attempt.status_code).toBe(204);
    await waitFor(async () => rx.received.some((r) => r.headers.get("x-service-delivery") === dead.id), { timeoutMs: 3000, intervalMs: 10, what: "the dead process's delivery" });
    const ids = () => rx.received.map((r) => r.headers.get("x-service-delivery"));
    await Bun.sleep(Math.max(0, live.leaseUntil - 300 - Date.now()));
    expect(ids().sort()).toEqual([dead.id, held.id].sort()); // the live lease still holds
    await waitFor(async () => ids().includes(live.id), { timeoutMs: 3000, intervalMs: 10, what: "the delivery once its lease ran out" });
    expect(rx.received.find((r) => r.headers.get("x-service-delivery") === dead.id)!.body).toBe(dead.body);
    await waitFor(async () => (await statusOf(t, live.id)) === "delivered", { timeoutMs: 2000, intervalMs: 10 });
    const rows = await t.service.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, id));
    const byId = new Map(rows.map((r) => [r.id, [r.status, r.claimedBy, r.leaseUntil]]));
    expect([dead.id, live.id, held.id].map((d) => byId.get(d))).toEqual([
      ["delivered", null, null],
      ["delivered", null, null],
      ["delivered", "dsp_elsewhere", held.leaseUntil], // delivered by hand; its holder finds it done and lets it go
    ]);
    await Bun.sleep(300);
    expect(ids()).toHaveLength(3);
  });
});

describe("outbound safety", () => {
  let strict: TestService;
  beforeAll(async () => {
    strict = await startTestService({ env: { ...ENV, ALLOW_PRIVATE_NETWORK: "0" } });
  });
  afterAll(() => strict.stop());

  test("private, loopback and link-local URLs are refused at registration", async () => {
    const org = await newOrg(strict);
    for (const url of ["https://127.0.0.1:8443/hook", "https://localhost/hook", "https://[::1]/hook", "https://169.254.169.254/latest", "https://10.0.0.8/", "https://192.168.1.1/"]) {
      const res = await org.api("/webhooks/", { method: "POST", json: { url, events: ["VIDEO_UPLOADED"] } });
      expect([url, res.status]).toEqual([url, 422]);
      expect(((await res.json()) as any).error).toEqual({ code: "VALIDATION_ERROR", details: { url: expect.stringContaining("private") } });
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

test("the signing secret never reaches the logs", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-logs-"));
  const lines: string[] = [];
  const logger = createLogger({ level: "debug", write: (l) => lines.push(l) });
  const service = await createService(loadConfig({ DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", ALLOW_PRIVATE_NETWORK: "1", ...ENV, WEBHOOK_RETRY_SCHEDULE: "0.05" }), { logger });
  const { port } = await service.listen();
  const rx = receiver(() => new Response(null, { status: 500 }));
  try {
    const { org, apiKey } = await service.orgs.createOrg("logs");
    const res = await fetch(`http://127.0.0.1:${port}/api/public/v1/webhooks/`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ url: rx.url, events: ["VIDEO_UPLOADED"] }),
    });
    const secret: string = ((await res.json()) as any).data.signing_secret;
    await service.runtime.create("video", uploadInput(org.id));
    await rx.waitFor(2);
    await waitFor(async () => lines.some((l) => l.includes("abandoned")), { timeoutMs: 3000 });
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).not.toContain(secret);
    expect(lines.find((l) => l.includes("abandoned"))).toContain("delivery_id");
  } finally {
    await service.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
