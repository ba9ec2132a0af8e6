import { expect, test } from "bun:test";
import { silentLogger } from "../log.ts";
import type { AttemptOutcome, Deliver, DeliveryRequest } from "./deliver.ts";
import type { AttemptResult, DeliveryRow, DeliveryStore } from "./delivery-store.ts";
import { createDispatcher } from "./dispatcher.ts";
import type { EndpointStore, SendableEndpoint } from "./endpoint-store.ts";

/**
 * A dispatcher over in-memory stores and a deliver() the test answers by hand.
 * An endpoint id "A:x" belongs to organization org_A; a plain id to org_1.
 */
function harness(
  opts: {
    maxPerEndpoint?: number;
    maxInFlight?: number;
    ceiling?: number;
    maxPerOrg?: number;
    maxQueued?: number;
    maxQueuedPerOrg?: number;
    schedule?: number[];
    leaseMs?: number;
    pollMs?: number;
  } = {},
) {
  const rows = new Map<string, DeliveryRow>();
  const recorded: AttemptResult[][] = [];
  const released: string[][] = [];
  /** Deliveries another process has taken over: a renewal no longer answers them as ours. */
  const takenOver = new Set<string>();
  const calls: Array<{ req: DeliveryRequest; answer: (ok: boolean) => void }> = [];
  let n = 0;
  const orgOf = (id: string) => (id.includes(":") ? `org_${id.split(":")[0]}` : "org_1");
  const endpoint = (id: string): SendableEndpoint => ({ id, orgId: orgOf(id), url: `https://example.com/${id}`, events: ["VIDEO_UPLOADED"], fields: [], secret: "s", createdAt: 0 });
  /** claimDue's arguments, and the rows it answers (set by a test). */
  const claims: Array<{ limit: number; skipOrgs: string[]; room: Record<string, number> }> = [];
  const due: DeliveryRow[] = [];
  const deliveries = {
    fanOut: async () => ({ deliveries: [], endpoints: [], events: 0 }),
    insertOne: async (ep: SendableEndpoint, event: string) => {
      const row: DeliveryRow = {
        id: `dlv_${++n}`,
        endpointId: ep.id,
        orgId: ep.orgId,
        eventId: `evt_${n}`,
        event,
        body: `{"n":${n}}`,
        test: false,
        status: "pending",
        attempts: 0,
        nextAttemptAt: Date.now(),
        claimedBy: "me",
        leaseUntil: Date.now() + 30_000,
        createdAt: Date.now(),
        updatedAt: Date.now(),
      };
      rows.set(row.id, row);
      return row;
    },
    record: async (results: AttemptResult[], _claim: unknown, releases: string[] = []) => {
      if (results.length > 0) recorded.push(results);
      if (releases.length > 0) released.push(releases);
    },
    claimDue: async (_now: number, limit: number, _claim: unknown, share: { skipOrgs?: string[]; roomFor?: (org: string) => number } = {}) => {
      const skipOrgs = share.skipOrgs ?? [];
      const room: Record<string, number> = {};
      for (const org of new Set(due.map((r) => r.orgId))) room[org] = share.roomFor?.(org) ?? Infinity;
      claims.push({ limit, skipOrgs, room });
      const left = { ...room };
      const rows = due.filter((r) => !skipOrgs.includes(r.orgId) && left[r.orgId]!-- > 0).slice(0, limit);
      for (const r of rows) due.splice(due.indexOf(r), 1);
      return { rows, more: false };
    },
    renew: async (ids: string[]) => new Set(ids.filter((id) => !takenOver.has(id))),
    nextDueAfter: async () => null,
  } as unknown as DeliveryStore;
  const endpoints = { sendableByIds: async (ids: string[]) => ids.map(endpoint) } as unknown as EndpointStore;
  const deliver: Deliver = (req, stop) =>
    new Promise<AttemptOutcome>((resolve) => {
      const outcome = (ok: boolean, aborted = false): AttemptOutcome => ({ ok, startedAt: Date.now(), durationMs: 1, statusCode: ok ? 200 : null, error: ok ? null : "failed", aborted });
      stop?.addEventListener("abort", () => resolve(outcome(false, true)));
      calls.push({ req, answer: (ok) => resolve(outcome(ok)) });
    });
  const { maxPerEndpoint, maxInFlight, ceiling, maxPerOrg, maxQueued, maxQueuedPerOrg } = opts;
  const dispatcher = createDispatcher({
    deliveries,
    endpoints,
    deliver,
    logger: silentLogger,
    retrySchedule: opts.schedule ?? [3600],
    stopGraceMs: 0,
    maxPerEndpoint,
    maxInFlight,
    ceiling,
    maxPerOrg,
    maxQueued,
    maxQueuedPerOrg,
    pollMs: opts.pollMs ?? 60_000,
    leaseMs: opts.leaseMs,
  });
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
  /** A pending, unclaimed delivery in the "database", found by the next load of due work. */
  const park = (ep: string, count: number) => {
    for (let i = 0; i < count; i++)
      due.push({
        id: `dlv_${++n}`,
        endpointId: ep,
        orgId: orgOf(ep),
        eventId: `evt_${n}`,
        event: "VIDEO_UPLOADED",
        body: `{"n":${n}}`,
        test: false,
        status: "pending",
        attempts: 0,
        nextAttemptAt: 0,
        claimedBy: null,
        leaseUntil: null,
        createdAt: 0,
        updatedAt: 0,
      });
  };
  const sentTo = (ep: string) => calls.filter((c) => c.req.url.endsWith(`/${ep}`)).length;
  return { dispatcher, calls, recorded, released, takenOver, inflightTo, answer, send, park, due, claims, sentTo };
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
  await h.send("A:b", 10); // one each: organizations with nothing in flight always may
  await h.send("B:c", 10);
  await settle();
  expect([h.inflightTo("a"), h.inflightTo("A:b"), h.inflightTo("B:c")]).toEqual([6, 1, 1]);
  for (let i = 0; i < 6; i++) {
    h.answer("a", true, 1);
    await settle();
  }
  // 8 in flight fell to 6 by the first two answers; the next four slots went a, b, c, a.
  expect([h.inflightTo("a"), h.inflightTo("A:b"), h.inflightTo("B:c")]).toEqual([2, 2, 2]);
  await h.dispatcher.stop();
});

test("an organization with nothing in flight may start one even when hung receivers fill the overall limit", async () => {
  const h = harness({ maxPerEndpoint: 4, maxInFlight: 4 });
  await h.dispatcher.start();
  await h.send("H:hung", 10);
  await h.send("O:other", 3);
  await h.send("H:sibling", 3); // the hung receivers' own organization: nothing more past the limit
  await settle();
  expect([h.inflightTo("H:hung"), h.inflightTo("O:other"), h.inflightTo("H:sibling")]).toEqual([4, 1, 0]);
  h.answer("O:other", true);
  await settle();
  h.answer("O:other", true);
  await settle();
  expect(h.sentTo("O:other")).toBe(3);
  expect(h.sentTo("H:sibling")).toBe(0);
  await h.dispatcher.stop();
});

test("the ceiling is never passed, however many organizations have nothing in flight", async () => {
  const h = harness({ maxPerEndpoint: 4, maxInFlight: 4, ceiling: 6 });
  await h.dispatcher.start();
  await h.send("H:hung", 10);
  for (const org of ["B", "C", "D", "E"]) await h.send(`${org}:x`, 2);
  await settle();
  expect(h.dispatcher.stats().inflight).toBe(6);
  expect([h.inflightTo("H:hung"), h.inflightTo("B:x"), h.inflightTo("C:x"), h.inflightTo("D:x"), h.inflightTo("E:x")]).toEqual([4, 1, 1, 0, 0]);
  h.answer("B:x", true);
  await settle();
  expect(h.dispatcher.stats().inflight).toBe(6); // the freed slot was used again, and no more
  expect(h.sentTo("B:x") + h.sentTo("C:x") + h.sentTo("D:x") + h.sentTo("E:x")).toBe(3);
  await h.dispatcher.stop();
});

test("one organization's receivers never hold more than its share; another organization's deliveries all start at once", async () => {
  const h = harness({ maxPerEndpoint: 16, maxPerOrg: 8, maxInFlight: 100 });
  await h.dispatcher.start();
  for (let i = 0; i < 10; i++) await h.send(`A:hung${i}`, 10); // 100 deliveries to hanging receivers
  await h.send("B:healthy", 5);
  await settle();
  expect(h.dispatcher.orgStats("org_A").inflight).toBe(8);
  expect(h.inflightTo("B:healthy")).toBe(5); // none waits behind A's
  h.answer("B:healthy", true);
  await settle();
  expect(h.dispatcher.orgStats("org_B").inflight).toBe(0);
  // Freed slots of A's go round A's endpoints in turn (hung0, which started last, then hung1), never past A's share.
  h.answer("A:hung0", false, 1);
  await settle();
  h.answer("A:hung0", false, 1);
  await settle();
  expect(h.dispatcher.orgStats("org_A").inflight).toBe(8);
  expect(h.dispatcher.stats().inflight).toBe(8);
  expect(h.inflightTo("A:hung1")).toBe(1);
  await h.dispatcher.stop();
});

test("one organization's backlog takes at most its share of memory: the rest waits in the database, another organization's is taken at once", async () => {
  // Swept every 100 ms (the lease), polled every 20 ms.
  const h = harness({ maxPerOrg: 2, maxQueued: 40, maxQueuedPerOrg: 10, leaseMs: 100, pollMs: 20 });
  await h.dispatcher.start();
  await h.send("A:hung", 15);
  await settle();
  expect(h.dispatcher.orgStats("org_A").held).toBe(10);
  expect(h.released.flat()).toHaveLength(5); // handed back to the database unsent
  await h.send("B:ok", 5);
  await settle();
  expect(h.dispatcher.orgStats("org_B").held).toBe(5);
  expect(h.inflightTo("B:ok")).toBe(2);
  // Due work of a full organization is not claimed; another's is.
  h.park("A:hung", 5);
  h.park("C:ok", 3);
  await Bun.sleep(250);
  expect(h.claims.at(-1)!.skipOrgs).toEqual(["org_A"]);
  expect(h.dispatcher.orgStats("org_C").held).toBe(3);
  expect(h.due.map((r) => r.orgId)).toEqual(Array(5).fill("org_A"));
  // One of A's finishes: room for one more, claimed at the next sweep (and no more than that).
  h.answer("A:hung", true, 1);
  await Bun.sleep(250);
  expect(h.dispatcher.orgStats("org_A").held).toBe(10);
  expect(h.due).toHaveLength(4);
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
