import { expect, test } from "bun:test";
import { inArray } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { videoInput } from "../machines/test-contexts.ts";
import { outbox, webhookDeliveries } from "../src/db/schema/index.ts";
import { newId, randomToken } from "../src/ids.ts";
import { deliveryBody } from "../src/webhooks/delivery-store.ts";
import { waitFor } from "./support/events.ts";
import { startTestService } from "./support/test-service.ts";
import { startWebhookReceiver, TEST_CA_FILE } from "./support/webhook-receiver.ts";
import { ok } from "./support/api.ts";

// A 10 s timeout: an attempt cut short by a slow answer would be retried, a legitimate second arrival.
// Leases of 10 s, renewed every third: a process stalled for seconds on a loaded machine keeps what it holds (a lapsed
// lease is another process's to take, and a delivery in flight when it lapses may then be sent twice: at-least-once).
const ENV = { WEBHOOK_CA_FILE: TEST_CA_FILE, WEBHOOK_TIMEOUT_MS: "10000", WEBHOOK_LEASE_MS: "10000", WEBHOOK_RETRY_SCHEDULE: "0.2,0.2,0.2" };

function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

/**
 * Two service processes on one database file: this test process (A) and a
 * child (B, test/support/webhook-crash-child.ts). Two services inside one
 * process cannot share a file: libSQL's busy wait on the second writer blocks
 * the event loop the first writer needs to commit (notes/stack-facts.md).
 */
test("two service processes on one database: each delivery is sent by exactly one of them, and both send", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-multi-"));
  // Answers are held until B is up, so A holds a backlog of due deliveries (in flight and queued) while B starts and sweeps.
  let openGate!: () => void;
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  const gateTimer = setTimeout(() => openGate(), 6000); // well within the 10 s timeout
  const rx = startWebhookReceiver(async () => {
    await gate;
    return new Response(null, { status: 204 });
  });
  const a = await startTestService({ dataDir, env: ENV });
  let b: ReturnType<typeof Bun.spawn> | undefined;
  try {
    const endpointIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await a.api("/webhooks/", { method: "POST", json: { url: `${rx.url}/${i}`, events: ["VIDEO_UPLOADED", "LIVESTREAM_SCHEDULED"] } });
      expect(res.status).toBe(201);
      endpointIds.push((await ok(res, "createWebhook")).data.endpoint.id);
    }
    const upload = () =>
      a.service.runtime.create("video", videoInput({ id: newId("vid"), orgId: a.orgId, title: "Clip", sourceUrl: `https://example.com/${randomToken(8)}.mp4`, createdAt: new Date().toISOString() }));

    // 1. A's events: fanned out by A at once, held by A.
    await Promise.all(Array.from({ length: 150 }, upload));

    // 2. B starts on the same files, listening on its own port.
    const portB = freePort();
    b = Bun.spawn([process.execPath, join(import.meta.dir, "support/webhook-crash-child.ts"), dataDir, a.orgId, a.apiKey, JSON.stringify({ ...ENV, PORT: String(portB) })], {
      stdout: "pipe",
      stderr: "inherit",
    });
    const reader = (b.stdout as ReadableStream<Uint8Array>).getReader();
    for (let out = ""; !out.includes("ready"); ) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the second process exited before it was ready");
      out += new TextDecoder().decode(value);
    }
    const apiB = (path: string, init: RequestInit & { json?: unknown } = {}) =>
      fetch(`http://127.0.0.1:${portB}/api/public/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${a.apiKey}`, "content-type": "application/json" },
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      });

    // 3. B's events: streams booked through B's API (B's runtime wakes B's fan-out), test events through both APIs.
    const scheduledAt = new Date(Date.now() + 86_400_000).toISOString();
    for (let i = 0; i < 40; i++) expect((await apiB("/livestreams/schedule/", { method: "POST", json: { title: `Show ${i}`, scheduled_at: scheduledAt } })).status).toBe(201);
    const tests = endpointIds.flatMap((id) => [
      ...Array.from({ length: 10 }, () => apiB(`/webhooks/${id}/test/`, { method: "POST", json: { event: "VIDEO_UPLOADED" } })),
      ...Array.from({ length: 10 }, () => a.api(`/webhooks/${id}/test/`, { method: "POST", json: { event: "VIDEO_UPLOADED" } })),
    ]);

    // 4. Nobody's: outbox rows written behind both runtimes' backs (whichever polls first fans them
    //    out), and deliveries a crashed process held until its lease ran out (whichever sweeps first).
    for (let i = 0; i < 10; i++) {
      const rows = Array.from({ length: 10 }, () => ({ id: newId("evt"), orgId: a.orgId, entityId: newId("vid"), event: "VIDEO_UPLOADED", payload: { n: i }, createdAt: Date.now() }));
      await a.service.database.write((tx) => tx.insert(outbox).values(rows));
      await Bun.sleep(70);
    }
    const now = Date.now();
    const orphans = Array.from({ length: 60 }, (_, i) => ({
      id: newId("dlv"),
      endpointId: endpointIds[i % 3]!,
      orgId: a.orgId,
      eventId: newId("evt"),
      event: "VIDEO_UPLOADED",
      body: deliveryBody("VIDEO_UPLOADED", now, { n: i }, []),
      test: false,
      status: "pending",
      attempts: 0,
      nextAttemptAt: now - 5000,
      claimedBy: "dsp_crashed",
      leaseUntil: now - 1,
      createdAt: now,
      updatedAt: now,
    }));
    await a.service.database.write((tx) => tx.insert(webhookDeliveries).values(orphans));

    openGate();
    for (const res of await Promise.all(tests)) expect(res.status).toBe(201);

    // (150 uploads + 40 streams + 100 outbox rows) × 3 endpoints + 60 test events + 60 orphans.
    const expected = (150 + 40 + 100) * 3 + 60 + 60;
    const all = await waitFor(
      async () => {
        const rows = await a.service.database.db
          .select({ id: webhookDeliveries.id, status: webhookDeliveries.status })
          .from(webhookDeliveries)
          .where(inArray(webhookDeliveries.endpointId, endpointIds));
        return rows.length === expected && rows.every((r) => r.status === "delivered") && rows;
      },
      { timeoutMs: 80_000, intervalMs: 50, what: `${expected} deliveries delivered` },
    );
    await Bun.sleep(1000); // room for a late duplicate to show up

    const perId = new Map<string, number>();
    for (const r of rx.received) {
      const id = r.headers.get("x-service-delivery")!;
      perId.set(id, (perId.get(id) ?? 0) + 1);
    }
    const twice = [...perId].filter(([, n]) => n > 1);
    expect(twice).toEqual([]);
    expect([...perId.keys()].sort()).toEqual(all.map((r) => r.id).sort());
    expect(rx.received).toHaveLength(expected);

    const byA = a.service.webhooks.dispatcher.stats().sent;
    const byB = rx.received.length - byA;
    console.log(`two processes: ${expected} deliveries, ${byA} sent by A, ${byB} by B`);
    expect(byA).toBeGreaterThan(0);
    expect(byB).toBeGreaterThan(0);
  } finally {
    clearTimeout(gateTimer);
    openGate();
    b?.kill(9);
    await b?.exited;
    await a.stop({ cleanup: false });
    rx.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 240_000);
