import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { webhookDeliveries } from "../src/db/schema/index.ts";
import { newId } from "../src/ids.ts";
import { verifyWebhook } from "../src/webhooks/verify-webhook.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { newOrg, sharedWebhookService, statusOf, WEBHOOK_ENV } from "./support/webhook-fixture.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

const shared = sharedWebhookService();
const { receiver } = shared;

describe("crash safety", () => {
  test("kill -9 between outbox write and fan-out, and between POST and recording: everything arrives, same id and bytes", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-crash-"));
    const rx = receiver(() => "hang");
    // 1. The event is written while no dispatcher runs (outbox row, no delivery yet).
    const first = await startTestService({ dataDir, env: WEBHOOK_ENV, listen: false });
    const org = await newOrg(first);
    const { id, secret } = await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    const { ctx } = await org.upload();
    await first.stop({ cleanup: false });

    // 2. A process fans it out and posts; it is killed while the receiver holds the request.
    const child = Bun.spawn(
      [process.execPath, join(import.meta.dir, "support/webhook-crash-child.ts"), dataDir, org.orgId, org.apiKey, JSON.stringify({ ...WEBHOOK_ENV, WEBHOOK_TIMEOUT_MS: "30000" })],
      {
        stdout: "pipe",
        stderr: "inherit",
      },
    );
    const [inFlight] = await rx.waitFor(1, 15_000);
    child.kill(9);
    await child.exited;

    // 3. After a restart the same delivery is sent again, same id, same bytes.
    rx.reply = () => new Response(null, { status: 200 });
    const again = await startTestService({ dataDir, env: WEBHOOK_ENV, org: { orgId: org.orgId, apiKey: org.apiKey } });
    try {
      const got = await rx.waitFor(2);
      expect(got[1]!.headers.get("x-service-delivery")).toBe(inFlight!.headers.get("x-service-delivery"));
      expect(got[1]!.body).toBe(inFlight!.body);
      expect(JSON.parse(got[1]!.body).data.video.id).toBe(ctx.id);
      expect(verifyWebhook({ body: got[1]!.body, headers: got[1]!.headers, secret })).toBe(true);
      const api: TestService["api"] = (path, init = {}) => again.api(path, { ...init, key: org.apiKey });
      const items = await waitFor(
        async () => {
          const list = (await ok(api(`/webhooks/${id}/deliveries/`), "listWebhookDeliveries")).data.items;
          return list[0]?.status === "DELIVERED" && list;
        },
        { timeoutMs: 5000 },
      );
      expect(items).toHaveLength(1);
    } finally {
      await again.stop({ cleanup: false });
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("service.stop() mid-delivery then a restart on the same data: the retry goes out with the same id", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-restart-"));
    const rx = receiver(() => "hang");
    const one = await startTestService({ dataDir, env: WEBHOOK_ENV });
    const org = await newOrg(one);
    await org.register({ url: rx.url, events: ["VIDEO_UPLOADED"] });
    await org.upload();
    const [inFlight] = await rx.waitFor(1);
    await one.stop({ cleanup: false });
    rx.reply = () => new Response(null, { status: 204 });
    const two = await startTestService({ dataDir, env: WEBHOOK_ENV, org: { orgId: org.orgId, apiKey: org.apiKey } });
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
    const org = await newOrg(shared.t);
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
    const live = row(2, "dsp_elsewhere", now + 2500); // another process holds it, by all appearances
    const held = row(3, "dsp_elsewhere", now + 60_000);
    await shared.t.service.database.write((tx) => tx.insert(webhookDeliveries).values([dead, live, held]));

    const res = await org.api(`/webhooks/${id}/deliveries/${held.id}/retry/`, { method: "POST" });
    expect((await ok(res, "retryWebhookDelivery")).data.attempt!.status_code).toBe(204);
    await waitFor(async () => rx.received.some((r) => r.headers.get("x-service-delivery") === dead.id), { timeoutMs: 3000, intervalMs: 10, what: "the dead process's delivery" });
    const ids = () => rx.received.map((r) => r.headers.get("x-service-delivery"));
    await Bun.sleep(Math.max(0, live.leaseUntil - 300 - Date.now()));
    expect(ids().sort()).toEqual([dead.id, held.id].sort()); // the live lease still holds
    await waitFor(async () => ids().includes(live.id), { timeoutMs: 3000, intervalMs: 10, what: "the delivery once its lease ran out" });
    expect(rx.received.find((r) => r.headers.get("x-service-delivery") === dead.id)!.body).toBe(dead.body);
    await waitFor(async () => (await statusOf(shared.t, live.id)) === "delivered", { timeoutMs: 2000, intervalMs: 10 });
    const rows = await shared.t.service.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, id));
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
