import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { videoData } from "../machines/video-payload.ts";
import { loadConfig } from "../src/config.ts";
import { randomBytes } from "node:crypto";
import { outbox, webhookDeliveries, webhookEndpoints } from "../src/db/schema/index.ts";
import { newId, randomToken } from "../src/ids.ts";
import { createEventSealer } from "../src/secrets/event-sealer.ts";
import { loadServerSecret } from "../src/secrets/server-secret.ts";
import { createLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";
import { verifyWebhook } from "../src/webhooks/verify-webhook.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { newOrg, sharedWebhookService, statusOf, uploadInput, WEBHOOK_ENV } from "./support/webhook-fixture.ts";

setDefaultTimeout(120_000);

const shared = sharedWebhookService();
const { receiver } = shared;

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

describe("deliveries", () => {
  test("an outbox event arrives signed, with the spec headers and the exact body", async () => {
    const org = await newOrg(shared.t);
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
    expect(verifyWebhook({ body: got!.body, headers: signature, secret })).toBe(true);
    expect(verifyWebhook({ body: got!.body.replace("TRANSCODING", "COMPLETED"), headers: signature, secret })).toBe(false);

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
    const org = await newOrg(shared.t);
    const other = await newOrg(shared.t);
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
    const org = await newOrg(shared.t);
    const rx = receiver((_, nth) => new Response("nope", { status: nth <= 2 ? 500 : 200 }));
    const { id, secret } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    const got = await rx.waitFor(3);
    expect(new Set(got.map((r) => r.headers.get("x-service-delivery"))).size).toBe(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    for (const r of got) expect(verifyWebhook({ body: r.body, headers: r.headers, secret })).toBe(true);
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
    const org = await newOrg(shared.t);
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
    const org = await newOrg(shared.t);
    const rx = receiver((r) => (r.path === "/hooks/moved" ? new Response(null, { status: 307, headers: { location: "/elsewhere" } }) : new Response("ok")));
    const { id } = await org.register({ url: `${rx.url}/moved`, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    const [delivery] = await org.waitDeliveries(id, (list) => list[0]?.attempts.length >= 2);
    expect(delivery.attempts[0]).toMatchObject({ status_code: 307, error: expect.stringContaining("redirects are not followed") });
    expect(rx.received.every((r) => r.path === "/hooks/moved")).toBe(true);
  });

  test("manual re-send: same id and bytes, now, even after abandonment", async () => {
    const org = await newOrg(shared.t);
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
    const org = await newOrg(shared.t);
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
    expect(verifyWebhook({ body: got!.body, headers: got!.headers, secret })).toBe(true);
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
    const org = await newOrg(shared.t);
    const rx = receiver();
    const broken = await org.register({ url: `${rx.url}/broken`, events: ["VIDEO_UPLOADED"] });
    await org.register({ url: `${rx.url}/fine`, events: ["VIDEO_UPLOADED"] });
    // As if SECRET_KEY had changed: the sealed value is from another key.
    const foreign = await sealedUnderAnotherKey();
    await shared.t.service.database.write((tx) => tx.update(webhookEndpoints).set({ sealedSecret: foreign }).where(eq(webhookEndpoints.id, broken.id)));
    await org.upload();
    await rx.waitFor(1);
    const [delivery] = await org.waitDeliveries(broken.id, (list) => list[0]?.attempts.length >= 1);
    expect(delivery.attempts[0]).toMatchObject({ status_code: null, error: expect.stringContaining("signing secret") });
    expect(rx.received.map((r) => r.path)).toEqual(["/hooks/fine"]);
  });

  test("a slow endpoint does not delay deliveries to others", async () => {
    // The dead endpoint's requests hang for the whole 60 s timeout; the live one's 60 deliveries must all arrive
    // while every one of them is still hanging (no attempt to /dead has ended), i.e. without waiting for a slot it holds.
    const patient = await startTestService({ env: { ...WEBHOOK_ENV, WEBHOOK_TIMEOUT_MS: "60000" } });
    const rx = receiver((r) => (r.path === "/hooks/dead" ? "hang" : new Response(null, { status: 204 })));
    try {
      const org = await newOrg(patient);
      const dead = await org.register({ url: `${rx.url}/dead`, events: ["VIDEO_UPLOADED"] });
      await org.register({ url: `${rx.url}/alive`, events: ["VIDEO_UPLOADED"] });
      await Promise.all(Array.from({ length: 60 }, () => org.upload()));
      await waitFor(async () => rx.received.filter((r) => r.path === "/hooks/alive").length === 60, { timeoutMs: 45_000, what: "60 deliveries to the live endpoint" });
      expect(rx.received.filter((r) => r.path === "/hooks/dead").length).toBeGreaterThan(0);
      const deadAttempts = (await org.waitDeliveries(dead.id, () => true)).flatMap((d: { attempts: unknown[] }) => d.attempts);
      expect(deadAttempts).toHaveLength(0);
    } finally {
      rx.stop();
      await patient.stop();
    }
  });

  test("an event or a delivery that cannot be opened (sealed under another secret) is set aside, and the ones after it still arrive", async () => {
    const org = await newOrg(shared.t);
    const rx = receiver();
    const { id } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    const foreign = createEventSealer(loadServerSecret("/nonexistent", randomBytes(32).toString("hex")));
    const eventId = newId("evt");
    const deliveryId = newId("dlv");
    const now = Date.now();
    await shared.t.service.database.write(async (tx) => {
      await tx
        .insert(outbox)
        .values({ id: eventId, orgId: org.orgId, entityId: "vid_foreign", event: "VIDEO_UPLOADED", payload: foreign.sealPayload({ video: { id: "vid_foreign" } }, eventId), createdAt: now });
      await tx.insert(webhookDeliveries).values({
        id: deliveryId,
        endpointId: id,
        orgId: org.orgId,
        eventId: newId("evt"),
        event: "VIDEO_UPLOADED",
        body: foreign.sealBody("{}", deliveryId),
        test: false,
        status: "pending",
        attempts: 0,
        nextAttemptAt: now,
        claimedBy: null,
        leaseUntil: null,
        createdAt: now,
        updatedAt: now,
      });
    });
    const { ctx } = await org.upload();
    const [got] = await rx.waitFor(1);
    expect(JSON.parse(got!.body).data.video.id).toBe(ctx.id);
    await waitFor(async () => (await statusOf(shared.t, deliveryId)) === "abandoned", { timeoutMs: 5000, what: "the unreadable delivery abandoned" });
    const fromForeign = await shared.t.service.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.eventId, eventId));
    expect(fromForeign).toHaveLength(0);
    expect(rx.received).toHaveLength(1);
  });
});

describe("removal", () => {
  let slow: TestService;
  beforeAll(async () => {
    // A retry 1 s out leaves time to delete while its timer is armed.
    slow = await startTestService({ env: { ...WEBHOOK_ENV, WEBHOOK_RETRY_SCHEDULE: "1,1" } });
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

test("the signing secret never reaches the logs", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-logs-"));
  const lines: string[] = [];
  const logger = createLogger({ level: "debug", write: (l) => lines.push(l) });
  const service = await createService(loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", ALLOW_PRIVATE_NETWORK: "1", ...WEBHOOK_ENV, WEBHOOK_RETRY_SCHEDULE: "0.05" }), {
    logger,
  });
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
