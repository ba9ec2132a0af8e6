/**
 * Webhook dispatch throughput and latency against plain fetch, same receiver,
 * same bodies, same run. The receiver is HTTPS on loopback (fixtures/tls) in a
 * worker thread.
 *
 * 1. Burst: N events land in the outbox in one transaction; the dispatcher
 *    fans them out to E endpoints and delivers → deliveries/s. Baseline: the
 *    same N×E bodies POSTed with plain fetch at the dispatcher's per-endpoint
 *    concurrency → requests/s.
 * 2. Steady: events created through the actor runtime (the real path) at R/s →
 *    event-to-delivery latency p50/p99 (outbox created_at → arrival).
 *    Baseline: plain fetch of the same bodies at the same rate (send → arrival).
 *
 * Usage: npm run bench:webhooks [-- --events 5000 --endpoints 1 --rate 500 --seconds 2]
 */
import { startReceiverWorker } from "./receiver-client.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { videoInput } from "../machines/test-contexts.ts";
import { loadConfig } from "../src/config.ts";
import { outbox } from "../src/db/schema/index.ts";
import { newId } from "../src/ids.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";
import { deliveryBody } from "../src/webhooks/delivery-store.ts";
import { sampleEventData } from "../src/webhooks/sample-events.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const N = arg("events", 5000);
const E = arg("endpoints", 1);
const RATE = arg("rate", 500);
const SECONDS = arg("seconds", 2);
const PER_ENDPOINT = 16; // the dispatcher's default per-endpoint concurrency
const CA_FILE = join(import.meta.dir, "../fixtures/tls/ca.pem");

const now = () => performance.timeOrigin + performance.now();
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

// Receiver thread.
const receiver = await startReceiverWorker();
const { port } = receiver;
const arrivals = () => receiver.drain();
async function waitArrivals(count: number, timeoutMs = 120_000): Promise<{ ids: string[]; at: number[] }> {
  const all = { ids: [] as string[], at: [] as number[] };
  const deadline = Date.now() + timeoutMs;
  while (all.ids.length < count && Date.now() < deadline) {
    await Bun.sleep(all.ids.length === 0 ? 5 : 20);
    const a = await arrivals();
    all.ids.push(...a.ids);
    all.at.push(...a.at);
  }
  if (all.ids.length < count) throw new Error(`only ${all.ids.length} of ${count} arrived`);
  return all;
}

// The service, dispatcher running.
const dataDir = mkdtempSync(join(tmpdir(), "bench-webhooks-"));
const service = await createService(loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent", ALLOW_PRIVATE_NETWORK: "1", WEBHOOK_CA_FILE: CA_FILE }), {
  logger: silentLogger,
});
await service.listen();
const { org } = await service.orgs.createOrg("bench");
const url = (i: number) => `https://127.0.0.1:${port}/hooks/${i}`;
for (let i = 0; i < E; i++) await service.webhooks.endpoints.create(org.id, { url: url(i), events: ["VIDEO_UPLOADED"], fields: [], description: null });
const payload = sampleEventData("VIDEO_UPLOADED", { baseUrl: "https://video.example.com" });

// Plain fetch with the dispatcher's TLS options (test CA added to the default roots).
const tls = { ca: [...rootCertificates, await Bun.file(CA_FILE).text()] };
async function plainPosts(bodies: Array<{ url: string; body: string; id: string }>, concurrency: number, onSend?: (id: string) => void) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const b = bodies[next++]!;
        onSend?.(b.id);
        const res = await fetch(b.url, { method: "POST", body: b.body, headers: { "content-type": "application/json", "x-service-delivery": b.id }, tls } as RequestInit);
        await res.arrayBuffer();
      }
    }),
  );
}

// Warm-up: connections, JIT, statement caches.
await plainPosts(
  Array.from({ length: 200 }, (_, i) => ({ url: url(0), body: "{}", id: `warm${i}` })),
  PER_ENDPOINT,
);
for (let i = 0; i < 100; i++)
  await service.database.write((tx) => tx.insert(outbox).values({ id: newId("evt"), orgId: org.id, entityId: "vid_warm", event: "VIDEO_UPLOADED", payload, createdAt: Date.now() }));
service.webhooks.dispatcher.wake();
await waitArrivals(200 + 100 * E);

// 1. Burst throughput.
const rows = Array.from({ length: N }, () => ({ id: newId("evt"), orgId: org.id, entityId: newId("vid"), event: "VIDEO_UPLOADED", payload, createdAt: Date.now() }));
const t0 = now();
for (let i = 0; i < rows.length; i += 500) {
  const part = rows.slice(i, i + 500);
  await service.database.write((tx) => tx.insert(outbox).values(part));
}
service.webhooks.dispatcher.wake();
const burst = await waitArrivals(N * E);
while (service.webhooks.dispatcher.stats().inMemory > 0) await Bun.sleep(2);
const recordedSeconds = (now() - t0) / 1000;
const dispatchSeconds = (Math.max(...burst.at) - t0) / 1000;
const dispatchRate = (N * E) / dispatchSeconds;
const unique = new Set(burst.ids).size;

const bodies = rows.flatMap((r, i) => Array.from({ length: E }, (_, e) => ({ url: url(e), body: deliveryBody(r.event, r.createdAt, r.payload, []), id: `plain${i}.${e}` })));
const p0 = now();
await Promise.all(
  Array.from({ length: E }, (_, e) =>
    plainPosts(
      bodies.filter((_, j) => j % E === e),
      PER_ENDPOINT,
    ),
  ),
);
const plainBurst = await waitArrivals(N * E);
const plainRate = (N * E) / ((Math.max(...plainBurst.at) - p0) / 1000);

// 2. Steady-rate latency through the actor runtime.
const total = Math.round(RATE * SECONDS);
const createdAt = new Map<string, number>();
const video = () => videoInput({ id: newId("vid"), orgId: org.id, title: "Bench", sourceUrl: `https://example.com/${newId("upl")}.mp4`, createdAt: new Date().toISOString() });
const pending: Promise<unknown>[] = [];
const s0 = now();
for (let i = 0; i < total; i++) {
  const due = s0 + (i * 1000) / RATE;
  const wait = due - now();
  if (wait > 1) await Bun.sleep(wait);
  pending.push(service.runtime.create("video", video()));
}
await Promise.all(pending);
const steady = await waitArrivals(total * E);
const ids = steady.ids;
const { webhookDeliveries } = await import("../src/db/schema/index.ts");
const { inArray } = await import("drizzle-orm");
for (let i = 0; i < ids.length; i += 400) {
  const part = await service.database.db
    .select({ id: webhookDeliveries.id, eventCreatedAt: webhookDeliveries.body })
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.id, ids.slice(i, i + 400)));
  // Bodies are stored sealed (src/secrets/event-sealer.ts).
  for (const p of part) createdAt.set(p.id, Date.parse(JSON.parse(service.webhooks.events.openBody(p.eventCreatedAt, p.id)).created_at));
}
const latencies = ids.map((id, i) => steady.at[i]! - createdAt.get(id)!);

const sentAt = new Map<string, number>();
const steadyBodies = bodies.slice(0, total * E);
const q0 = now();
let k = 0;
const inflight: Promise<void>[] = [];
for (let i = 0; i < total; i++) {
  const due = q0 + (i * 1000) / RATE;
  const wait = due - now();
  if (wait > 1) await Bun.sleep(wait);
  for (let e = 0; e < E; e++) {
    const b = { ...steadyBodies[k++]!, id: `steady${i}.${e}` };
    sentAt.set(b.id, now());
    inflight.push(
      fetch(b.url, { method: "POST", body: b.body, headers: { "content-type": "application/json", "x-service-delivery": b.id }, tls } as RequestInit)
        .then((r) => r.arrayBuffer())
        .then(() => undefined),
    );
  }
}
await Promise.all(inflight);
const plainSteady = await waitArrivals(total * E);
const plainLatencies = plainSteady.ids.map((id, i) => plainSteady.at[i]! - sentAt.get(id)!);

const ms = (x: number) => `${x.toFixed(1)} ms`;
const dP50 = pct(latencies, 50);
const dP99 = pct(latencies, 99);
console.log(`bench:webhooks  https receiver on loopback (worker thread), ${E} endpoint(s), ~${Buffer.byteLength(bodies[0]!.body)} B bodies`);
console.log(
  `burst    ${N} events → ${N * E} deliveries (${unique} distinct ids): dispatcher ${dispatchRate.toFixed(0)} deliveries/s (fan-out, sign, POST, record) vs plain fetch ${plainRate.toFixed(0)} req/s at ${PER_ENDPOINT} concurrent → ratio ${(dispatchRate / plainRate).toFixed(2)}; every result recorded after ${recordedSeconds.toFixed(2)} s (${((N * E) / recordedSeconds).toFixed(0)}/s)`,
);
console.log(
  `steady   ${total} events at ${RATE}/s via the actor runtime: event→delivery p50 ${ms(dP50)} p99 ${ms(dP99)}; plain fetch send→arrival p50 ${ms(pct(plainLatencies, 50))} p99 ${ms(pct(plainLatencies, 99))}`,
);
const ok = dispatchRate >= 1000 && dP50 < 50 && unique === N * E;
console.log(`targets  ≥ 1000 deliveries/s: ${dispatchRate >= 1000 ? "met" : "MISSED"}; p50 < 50 ms: ${dP50 < 50 ? "met" : "MISSED"}; every delivery once: ${unique === N * E ? "yes" : "NO"}`);
if (!ok) process.exitCode = 1;

await service.stop();
receiver.stop();
rmSync(dataDir, { recursive: true, force: true });
