import { expect, test } from "bun:test";
import { silentLogger } from "../log.ts";
import type { AttemptOutcome, Deliver, DeliveryRequest } from "./deliver.ts";
import type { AttemptResult, DeliveryRow, DeliveryStore } from "./delivery-store.ts";
import { createDispatcher } from "./dispatcher.ts";
import type { EndpointStore, SendableEndpoint } from "./endpoint-store.ts";

/** A dispatcher over in-memory stores and a deliver() the test answers by hand. */
function harness(opts: { maxPerEndpoint?: number; maxInFlight?: number; schedule?: number[]; leaseMs?: number } = {}) {
  const rows = new Map<string, DeliveryRow>();
  const recorded: AttemptResult[][] = [];
  const released: string[][] = [];
  /** Deliveries another process has taken over: a renewal no longer answers them as ours. */
  const takenOver = new Set<string>();
  const calls: Array<{ req: DeliveryRequest; answer: (ok: boolean) => void }> = [];
  let n = 0;
  const endpoint = (id: string): SendableEndpoint => ({ id, orgId: "org_1", url: `https://example.com/${id}`, events: ["VIDEO_UPLOADED"], fields: [], secret: "s", createdAt: 0 });
  const deliveries = {
    fanOut: async () => ({ deliveries: [], endpoints: [], events: 0 }),
    insertOne: async (ep: SendableEndpoint, event: string) => {
      const row: DeliveryRow = { id: `dlv_${++n}`, endpointId: ep.id, orgId: ep.orgId, eventId: `evt_${n}`, event, body: `{"n":${n}}`, test: false, status: "pending", attempts: 0, nextAttemptAt: Date.now(), claimedBy: "me", leaseUntil: Date.now() + 30_000, createdAt: Date.now(), updatedAt: Date.now() };
      rows.set(row.id, row);
      return row;
    },
    record: async (results: AttemptResult[], _claim: unknown, releases: string[] = []) => {
      if (results.length > 0) recorded.push(results);
      if (releases.length > 0) released.push(releases);
    },
    claimDue: async () => ({ rows: [], more: false }),
    renew: async (ids: string[]) => new Set(ids.filter((id) => !takenOver.has(id))),
    nextDueAfter: async () => null,
    prune: async () => 0,
  } as unknown as DeliveryStore;
  const endpoints = { sendableByIds: async (ids: string[]) => ids.map(endpoint) } as unknown as EndpointStore;
  const deliver: Deliver = (req, stop) =>
    new Promise<AttemptOutcome>((resolve) => {
      const outcome = (ok: boolean, aborted = false): AttemptOutcome => ({ ok, startedAt: Date.now(), durationMs: 1, statusCode: ok ? 200 : null, error: ok ? null : "failed", aborted });
      stop?.addEventListener("abort", () => resolve(outcome(false, true)));
      calls.push({ req, answer: (ok) => resolve(outcome(ok)) });
    });
  const dispatcher = createDispatcher({ deliveries, endpoints, deliver, logger: silentLogger, retrySchedule: opts.schedule ?? [3600], stopGraceMs: 0, maxPerEndpoint: opts.maxPerEndpoint, maxInFlight: opts.maxInFlight, pollMs: 60_000, leaseMs: opts.leaseMs });
  const inflightTo = (ep: string) => calls.filter((c) => c.req.url.endsWith(`/${ep}`) && !(c as { done?: boolean }).done).length;
  const answer = (ep: string, ok: boolean, count = Infinity) => {
    for (const c of calls) {
      if (count <= 0) break;
      const call = c as typeof c & { done?: boolean };
      if (!call.done && c.req.url.endsWith(`/${ep}`)) {
        call.done = true;
        c.answer(ok);
        count--;
      }
    }
  };
  const send = async (ep: string, count: number) => {
    for (let i = 0; i < count; i++) await dispatcher.sendOne(ep, "VIDEO_UPLOADED", {}, { test: false });
  };
  return { dispatcher, calls, recorded, released, takenOver, inflightTo, answer, send };
}

const settle = () => Bun.sleep(20);

test("a dead endpoint holds at most its per-endpoint slots; the others keep flowing", async () => {
  const h = harness({ maxPerEndpoint: 4 });
  await h.dispatcher.start();
  await h.send("dead", 10);
  await h.send("live", 10);
  await settle();
  expect(h.inflightTo("dead")).toBe(4);
  expect(h.inflightTo("live")).toBe(4);
  for (let i = 0; i < 3; i++) {
    h.answer("live", true);
    await settle();
  }
  expect(h.calls.filter((c) => c.req.url.endsWith("/live"))).toHaveLength(10);
  expect(h.inflightTo("dead")).toBe(4);
  await h.dispatcher.stop();
});

test("after three failures in a row an endpoint gets two slots, until one attempt succeeds", async () => {
  const h = harness({ maxPerEndpoint: 8 });
  await h.dispatcher.start();
  await h.send("flaky", 30);
  await settle();
  expect(h.inflightTo("flaky")).toBe(8);
  h.answer("flaky", false, 3);
  await settle();
  expect(h.inflightTo("flaky")).toBe(7); // the first two freed slots were refilled, the third not: it counts as failing now
  h.answer("flaky", false, 5);
  await settle();
  expect(h.inflightTo("flaky")).toBe(2);
  h.answer("flaky", false, 1);
  await settle();
  expect(h.inflightTo("flaky")).toBe(2); // one freed, one refilled: two at most
  h.answer("flaky", true, 1);
  await settle();
  expect(h.inflightTo("flaky")).toBe(8);
  await h.dispatcher.stop();
});

test("the overall limit holds across endpoints, and freed slots go round the endpoints", async () => {
  const h = harness({ maxPerEndpoint: 8, maxInFlight: 6 });
  await h.dispatcher.start();
  await h.send("a", 10); // takes all 6 slots
  await h.send("b", 10); // one each: endpoints with nothing in flight always may
  await h.send("c", 10);
  await settle();
  expect([h.inflightTo("a"), h.inflightTo("b"), h.inflightTo("c")]).toEqual([6, 1, 1]);
  for (let i = 0; i < 6; i++) {
    h.answer("a", true, 1);
    await settle();
  }
  // 8 in flight fell to 6 by the first two answers; the next four slots went a, b, c, a.
  expect([h.inflightTo("a"), h.inflightTo("b"), h.inflightTo("c")]).toEqual([2, 2, 2]);
  await h.dispatcher.stop();
});

test("an endpoint with nothing in flight may start one even when hung receivers fill the overall limit", async () => {
  const h = harness({ maxPerEndpoint: 4, maxInFlight: 4 });
  await h.dispatcher.start();
  await h.send("hung", 10);
  await h.send("other", 3);
  await settle();
  expect([h.inflightTo("hung"), h.inflightTo("other")]).toEqual([4, 1]);
  h.answer("other", true);
  await settle();
  h.answer("other", true);
  await settle();
  expect(h.calls.filter((c) => c.req.url.endsWith("/other"))).toHaveLength(3);
  await h.dispatcher.stop();
});

test("results that finish together are recorded in one transaction", async () => {
  const h = harness({ maxPerEndpoint: 16 });
  await h.dispatcher.start();
  await h.send("e", 16);
  await settle();
  h.answer("e", true);
  await settle();
  expect(h.recorded.map((r) => r.length)).toEqual([16]);
  expect(h.recorded[0]!.every((r) => r.verdict.kind === "delivered")).toBe(true);
  await h.dispatcher.stop();
});

test("failures get a retry verdict until the schedule runs out, then abandoned", async () => {
  const h = harness({ schedule: [0.01, 0.01] });
  await h.dispatcher.start();
  await h.send("x", 1);
  for (let i = 0; i < 3; i++) {
    await settle();
    h.answer("x", false);
  }
  await settle();
  expect(h.recorded.flat().map((r) => r.verdict.kind)).toEqual(["retry", "retry", "abandoned"]);
  expect(new Set(h.calls.map((c) => c.req.deliveryId)).size).toBe(1);
  expect(new Set(h.calls.map((c) => c.req.body)).size).toBe(1);
  await h.dispatcher.stop();
});

test("a delivery whose lease was taken over is dropped unsent; stop releases the leases of what did not run", async () => {
  const h = harness({ maxPerEndpoint: 1, leaseMs: 150 });
  await h.dispatcher.start();
  await h.send("e", 3); // dlv_1 in flight, dlv_2 and dlv_3 queued behind it
  await settle();
  expect(h.calls.map((c) => c.req.deliveryId)).toEqual(["dlv_1"]);
  h.takenOver.add("dlv_2"); // our lease ran out and another process claimed it
  await Bun.sleep(120); // a renewal (every 50 ms) finds it gone
  h.answer("e", true);
  await Bun.sleep(60);
  expect(h.calls.map((c) => c.req.deliveryId)).toEqual(["dlv_1", "dlv_3"]);
  expect(h.released.flat()).toEqual([]); // not ours any more: nothing to release
  await h.send("e", 1); // dlv_4 waits behind dlv_3, still in flight
  await h.dispatcher.stop();
  expect(h.released.flat().sort()).toEqual(["dlv_3", "dlv_4"]); // cut in flight and never started: both handed back
  expect(h.recorded.flat().map((r) => r.deliveryId)).toEqual(["dlv_1"]);
});
