import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { sql } from "drizzle-orm";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { type Ok, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

// Live slots are shared: one organization may hold at most LIVE_SLOTS_PER_ORG (default 10) of them.
let t: TestService;
let otherKey: string;

beforeAll(async () => {
  // Bookings become ready at once (their time is within the lead), so the slot rule is what decides.
  t = await startTestService({ env: { LIVE_SCHEDULE_LEAD_MS: "600000" } });
  const other = await t.service.orgs.createOrg("other");
  await t.service.orgs.updateSettings(other.org.id, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 1_000_000, livestreamsCreatePerMinute: 1_000 } }));
  otherKey = other.apiKey;
});
afterAll(() => t.stop());

async function post(path: string, json: unknown, key?: string) {
  const res = await t.api(path, { method: "POST", json, key });
  // Untyped on purpose: this helper reads every route the test calls (success or error) and the test walks the answer by key; the typed readers are test/support/api.ts.
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

async function allStreams(key?: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const body: Ok<"listLivestreams"> = await ok(t.api(`/livestreams/?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key }), "listLivestreams");
    items.push(...body.data.items);
    cursor = body.data.next_cursor;
  } while (cursor);
  return items;
}

describe("live slots per organization", () => {
  test("one organization books 110 streams: 10 become ready, the rest ERROR NO_SLOTS_AVAILABLE, another organization still creates", async () => {
    // The default org's live limit is raised for tests (test-service.ts), isolating the slot rule from the 10/min rate limit.
    const at = new Date(Date.now() + 120_000).toISOString();
    const booked = await Promise.all(Array.from({ length: 110 }, (_, i) => post("/livestreams/schedule/", { title: `hoard ${i}`, scheduled_at: at })));
    expect(booked.map((b) => b.status)).toEqual(Array(110).fill(201));
    expect(booked.every((b) => b.body.data.stream.status === "SCHEDULED")).toBe(true);

    const settled = await waitFor(
      async () => {
        const items = await allStreams();
        return items.length === 110 && items.every((s) => s.status !== "SCHEDULED") ? items : undefined;
      },
      { timeoutMs: 30_000, what: "every booking to become ready or fail" },
    );
    const ready = settled.filter((s) => s.status === "READY_TO_STREAM");
    const failed = settled.filter((s) => s.status === "ERROR");
    expect(ready).toHaveLength(10);
    expect(failed).toHaveLength(100);
    expect(failed.every((s) => s.error?.code === "NO_SLOTS_AVAILABLE")).toBe(true);

    // The hoarding organization is at its cap...
    const mine = await post("/livestreams/", { title: "one more" });
    expect(mine.status).toBe(503);
    expect(mine.body.error.code).toBe("NO_SLOTS_AVAILABLE");
    // ...and the others are not affected: create right away, and a booking of theirs becomes ready.
    const theirs = await post("/livestreams/", { title: "other org" }, otherKey);
    expect(theirs.status).toBe(201);
    expect(theirs.body.data.stream.status).toBe("READY_TO_STREAM");
    const theirBooking = await post("/livestreams/schedule/", { title: "other booked", scheduled_at: at }, otherKey);
    expect(theirBooking.status).toBe(201);
    const id = theirBooking.body.data.stream.id;
    await waitFor(async () => (await ok(t.api(`/livestreams/${id}/`, { key: otherKey }), "getLivestream")).data.stream.status === "READY_TO_STREAM", {
      timeoutMs: 10_000,
      what: "the other org's booking ready",
    });

    // Ending one of the hoarder's streams frees one of its slots.
    expect((await post(`/livestreams/${ready[0].id}/end/`, {})).status).toBe(200);
    expect((await post("/livestreams/", { title: "freed" })).status).toBe(201);
    expect((await post("/livestreams/", { title: "capped again" })).status).toBe(503);

    // Cleanup for the next test: end everything still holding a slot.
    for (const s of await allStreams()) if (s.status === "READY_TO_STREAM") await post(`/livestreams/${s.id}/end/`, {});
    for (const s of await allStreams(otherKey)) if (s.status === "READY_TO_STREAM") await post(`/livestreams/${s.id}/end/`, {}, otherKey);
  }, 60_000);

  test("direct creation: the 11th stream of one organization is refused, nothing is created, other organizations create", async () => {
    const before = (await allStreams()).length;
    for (let i = 0; i < 10; i++) expect((await post("/livestreams/", { title: `s${i}` })).status).toBe(201);
    const over = await post("/livestreams/", { title: "eleventh" });
    expect(over.status).toBe(503);
    expect(over.body.error.code).toBe("NO_SLOTS_AVAILABLE");
    expect((await allStreams()).length).toBe(before + 10);
    expect((await post("/livestreams/", { title: "theirs" }, otherKey)).status).toBe(201);
    for (const s of await allStreams()) if (s.status === "READY_TO_STREAM") await post(`/livestreams/${s.id}/end/`, {});
    for (const s of await allStreams(otherKey)) if (s.status === "READY_TO_STREAM") await post(`/livestreams/${s.id}/end/`, {}, otherKey);
  }, 120_000);

  test("slots are counted from an index, not a scan of every actor", async () => {
    const plan = (await t.service.database.db.all(
      sql`EXPLAIN QUERY PLAN SELECT count(*) FROM actors WHERE kind = 'livestream' AND status IN ('READY_TO_STREAM', 'LIVE') AND deleted_at IS NULL AND org_id = ${t.orgId}`,
    )) as Array<{ detail: string }>;
    const details = plan.map((r) => r.detail).join("\n");
    expect(details).toContain("actors_kind_status_org");
    expect(details).not.toMatch(/SCAN actors\b(?! USING)/);
  });
});

describe("the pool still bounds everyone", () => {
  test("LIVE_SLOTS below the per-organization cap: the pool refuses the next organization", async () => {
    const svc = await startTestService({ env: { LIVE_SLOTS: "3", LIVE_SLOTS_PER_ORG: "2" } });
    try {
      const other = await svc.service.orgs.createOrg("b");
      const call = async (key?: string) => (await svc.api("/livestreams/", { method: "POST", json: { title: "x" }, key })).status;
      expect([await call(), await call(), await call()]).toEqual([201, 201, 503]); // per-org cap
      expect([await call(other.apiKey), await call(other.apiKey)]).toEqual([201, 503]); // pool of 3 full
    } finally {
      await svc.stop();
    }
  });
});
