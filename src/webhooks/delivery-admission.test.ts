import { expect, test } from "bun:test";
import { createDeliveryAdmission } from "./delivery-admission.ts";

const policy = (o: { maxHeld?: number; maxHeldPerOrg?: number } = {}) =>
  createDeliveryAdmission({ maxHeld: o.maxHeld ?? 100, maxHeldPerOrg: o.maxHeldPerOrg ?? 10, parkAfterMs: 60_000, sweepMs: 1000 });

test("one organization holds at most its share; another's still fit", () => {
  const a = policy({ maxHeldPerOrg: 3 });
  expect([1, 2, 3, 4].map(() => a.hold("org_A"))).toEqual([true, true, true, false]);
  expect(a.hold("org_B")).toBe(true);
  expect([a.held, a.heldOf("org_A"), a.heldOf("org_B")]).toEqual([4, 3, 1]);
  expect(a.claimShare()!.skipOrgs).toEqual(["org_A"]);
});

test("a full organization is looked at again once a tenth of its share is free, not at every free place", () => {
  const a = policy({ maxHeldPerOrg: 20 });
  for (let i = 0; i < 20; i++) a.hold("org_A");
  a.swept(0, null);
  a.claimed(false);
  a.unhold("org_A"); // 19 held: still skipped
  expect(a.claimShare()!.skipOrgs).toEqual(["org_A"]);
  expect(a.shouldLoad(1)).toBe(false);
  a.unhold("org_A"); // 18 = 20 - 2: room again, its backlog is loaded at the next tick
  expect(a.claimShare()!.skipOrgs).toEqual([]);
  expect(a.shouldLoad(1)).toBe(true);
});

test("a load may claim what memory has room for, at most each organization's room; none when memory is full", () => {
  const a = policy({ maxHeld: 5, maxHeldPerOrg: 3 });
  a.hold("org_A");
  a.hold("org_A");
  const share = a.claimShare()!;
  expect(share.limit).toBe(3);
  expect([share.roomFor("org_A"), share.roomFor("org_B")]).toEqual([1, 3]);
  a.hold("org_B");
  expect(share.roomFor("org_B")).toBe(2); // read when the load claims, not when it started
  a.hold("org_B");
  a.hold("org_C");
  a.swept(0, null);
  a.claimed(false);
  expect(a.claimShare()).toBeNull();
  expect(a.shouldLoad(1)).toBe(true); // memory full counts as a backlog
});

test("a delivery refused for want of memory is a backlog; one refused for its organization's share is not", () => {
  const a = policy({ maxHeld: 2, maxHeldPerOrg: 1 });
  a.hold("org_A");
  a.swept(0, null);
  a.claimed(false);
  expect(a.hold("org_A")).toBe(false);
  expect(a.shouldLoad(1)).toBe(false);
  a.hold("org_B");
  expect(a.hold("org_C")).toBe(false);
  expect(a.shouldLoad(1)).toBe(true);
});

test("far retries are parked; the database is looked at when the first falls due, and at every sweep", () => {
  const a = policy();
  expect([a.parks(60_000), a.parks(60_001)]).toEqual([false, true]);
  a.swept(0, null);
  a.claimed(false);
  a.parked(500);
  a.parked(300);
  expect([a.shouldLoad(299), a.shouldLoad(300)]).toEqual([false, true]);
  a.swept(300, 800); // the database says when the next one falls due
  expect([a.shouldLoad(799), a.shouldLoad(800)]).toEqual([false, true]);
  a.swept(800, null);
  expect([a.shouldLoad(1799), a.shouldLoad(1800)]).toEqual([false, true]); // sweepMs
});

test("a load that filled its limit leaves a backlog; places given back are counted once", () => {
  const a = policy();
  a.swept(0, null);
  a.claimed(true);
  expect(a.shouldLoad(1)).toBe(true);
  a.claimed(false);
  expect(a.shouldLoad(1)).toBe(false);
  a.hold("org_A");
  a.unhold("org_A");
  a.unhold("org_A"); // not held: nothing to give back
  expect([a.held, a.heldOf("org_A")]).toEqual([0, 0]);
});
