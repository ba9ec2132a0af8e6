import { afterAll, beforeAll, expect } from "bun:test";
import { eq } from "drizzle-orm";
import { videoInput } from "../../machines/test-contexts.ts";
import type { VideoContext } from "../../machines/video-payload.ts";
import { webhookDeliveries } from "../../src/db/schema/index.ts";
import { newId, randomToken } from "../../src/ids.ts";
import type { OrgSettings } from "../../src/orgs/org-settings.ts";
import { waitFor } from "./events.ts";
import { startTestService, type TestService } from "./test-service.ts";
import { startWebhookReceiver, TEST_CA_FILE, type WebhookReceiver } from "./webhook-receiver.ts";
import { answer, ok } from "./api.ts";

// WEBHOOK_LEASE_MS: a killed process's deliveries are taken over within about two leases (default 30 s).
export const WEBHOOK_ENV = { WEBHOOK_CA_FILE: TEST_CA_FILE, WEBHOOK_RETRY_SCHEDULE: "0.2,0.2,0.2", WEBHOOK_TIMEOUT_MS: "300", WEBHOOK_LEASE_MS: "1000" };

/** A fresh upload of `orgId`: its creation writes VIDEO_UPLOADED to the outbox. */
export const uploadInput = (orgId: string): VideoContext =>
  videoInput({ id: newId("vid"), orgId, title: `Clip ${randomToken(4)} é`, sourceUrl: `https://example.com/${randomToken(8)}.mp4`, createdAt: new Date().toISOString() });

export interface Org {
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

export async function newOrg(t: TestService, settings?: OrgSettings): Promise<Org> {
  const { org, apiKey } = await t.service.orgs.createOrg(`org-${randomToken(4)}`, settings);
  const api: TestService["api"] = (path, init = {}) => t.api(path, { ...init, key: init.key === undefined ? apiKey : init.key });
  const handle: Org = {
    orgId: org.id,
    apiKey,
    api,
    async register(body) {
      const res = await api("/webhooks/", { method: "POST", json: body });
      const json = await answer(res, "createWebhook");
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
      return (await ok(res, "listWebhookDeliveries")).data.items;
    },
    waitDeliveries(endpointId, ready, timeoutMs = 5000) {
      return waitFor(
        async () => {
          const list = await handle.deliveries(endpointId);
          return ready(list) && list;
        },
        { timeoutMs, intervalMs: 20, what: `deliveries of ${endpointId}` },
      );
    },
  };
  return handle;
}

export const statusOf = async (t: TestService, deliveryId: string) => (await t.service.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId)))[0]?.status;

/**
 * The service a test file's webhook tests share (started with WEBHOOK_ENV
 * before them, `t` from then on) and the receivers they open, all stopped
 * after the file's tests.
 */
export function sharedWebhookService() {
  const receivers: WebhookReceiver[] = [];
  const shared = {
    t: undefined as unknown as TestService,
    receiver(...args: Parameters<typeof startWebhookReceiver>): WebhookReceiver {
      const r = startWebhookReceiver(...args);
      receivers.push(r);
      return r;
    },
  };
  beforeAll(async () => {
    shared.t = await startTestService({ env: WEBHOOK_ENV });
  });
  afterAll(async () => {
    await shared.t.stop();
    for (const r of receivers) r.stop();
  });
  return shared;
}
