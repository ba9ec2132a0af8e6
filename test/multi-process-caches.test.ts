import { expect, test } from "bun:test";
import { newId, randomToken } from "../src/ids.ts";
import { videoInput } from "../machines/test-contexts.ts";
import { type Child, spawnService } from "./support/service-process.ts";
import { startSqld } from "./support/sqld.ts";
import { startTestService } from "./support/test-service.ts";
import { startWebhookReceiver, TEST_CA_FILE } from "./support/webhook-receiver.ts";
import { ok } from "./support/api.ts";

/**
 * What one process changes, another process on the same database (a libSQL
 * server, sqld; or one file) honours: API key revocation and organization settings on its next
 * request, a deleted webhook endpoint within its endpoint cache's recheck
 * period (src/webhooks/endpoint-cache.ts, 1 s).
 */

// Failed attempts are retried about every second and held in memory (on a timer) by the process that made them.
const ENV = { WEBHOOK_CA_FILE: TEST_CA_FILE, WEBHOOK_RETRY_SCHEDULE: "1,1,1,1,1,1,1,1,1,1" };

test.each(["sqld", "file"])(
  "process B honours what process A changed (%s): settings and a revoked key at once, a deleted endpoint within its recheck period",
  async (kind) => {
    // On a file, B's key lookup goes through its read-only hot connection with cached statements (src/db).
    const server = kind === "sqld" ? await startSqld() : undefined;
    const rx = startWebhookReceiver(() => new Response(null, { status: 500 }));
    const a = await startTestService({ env: { ...ENV, ...(server ? { DATABASE_URL: server.url } : {}) } });
    let b: Child | undefined;
    try {
      b = await spawnService({ ...ENV, DATA_DIR: a.dataDir, ...(server ? { DATABASE_URL: server.httpUrl } : {}) }, { orgId: a.orgId, apiKey: a.apiKey });
      const orgOnB = async () => (await ok(b!.api("/organization/"), "getOrganization")).data?.organization;

      // Settings: changed through A, read by B on its next request.
      expect((await orgOnB()).limits.videos_create_per_minute).toBe(1000);
      await a.service.orgs.updateSettings(a.orgId, (s) => ({ ...s, limits: { ...s.limits, videosCreatePerMinute: 7 } }));
      expect((await orgOnB()).limits.videos_create_per_minute).toBe(7);

      // A deleted endpoint: only B sends (A's dispatcher is stopped), and B keeps retrying a failing receiver.
      await a.service.webhooks.stop();
      const created = await a.api("/webhooks/", { method: "POST", json: { url: rx.url, events: ["VIDEO_UPLOADED"] } });
      expect(created.status).toBe(201);
      const endpointId = (await ok(created, "createWebhook")).data.endpoint.id;
      await a.service.runtime.create(
        "video",
        videoInput({ id: newId("vid"), orgId: a.orgId, title: "Clip", sourceUrl: `https://example.com/${randomToken(8)}.mp4`, createdAt: new Date().toISOString() }),
      );
      await rx.waitFor(2, 15_000); // the first attempt and a retry: B holds the delivery and its endpoint
      const deleted = await a.api(`/webhooks/${endpointId}/`, { method: "DELETE" });
      expect(deleted.status).toBe(200);
      expect((await ok(deleted, "deleteWebhook")).data.dropped_deliveries).toBe(1);
      const atDelete = rx.received.length;
      // Without the recheck B would retry every second until its lease renewal (every 10 s) found the delivery gone.
      await Bun.sleep(5000);
      expect(rx.received.length - atDelete).toBeLessThanOrEqual(1);

      // A revoked key: refused by B on the very next request.
      expect((await b.api("/organization/")).status).toBe(200);
      expect(await a.service.orgs.revokeKey(a.orgId)).toBe(1);
      expect((await b.api("/organization/")).status).toBe(401);
    } finally {
      await b?.stop();
      await a.stop();
      rx.stop();
      await server?.stop();
    }
  },
  120_000,
);
