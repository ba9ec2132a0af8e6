/**
 * Issue 23 item 6: the DRM licence's per-address limit counts an IPv6 client
 * by its /64, as RTMP and WHIP do, so one host cannot rotate through its
 * addresses to multiply the allowance. Black-box, behind one proxy
 * (TRUST_PROXY=1: the client is X-Forwarded-For's entry).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { DRM_LICENCE_LIMITS } from "../src/http/route-limits.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed } from "./support/api.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "3600000", TRUST_PROXY: "1" } });
});
afterAll(() => t?.stop());

const licence = (from: string) =>
  fetch(`${t.base}/drm/clearkey/vid_nothere/license?token=guess`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": from },
    body: JSON.stringify({ kids: ["AAAAAAAAAAAAAAAAAAAAAA"], type: "temporary" }),
  });

describe("DRM licence per-address limit", () => {
  test(`${DRM_LICENCE_LIMITS.perAddress} requests from one IPv6 /64 (a new host part each), then 429; the next /64 and an IPv4 client are others`, async () => {
    const statuses = new Map<number, number>();
    for (let i = 0; i < DRM_LICENCE_LIMITS.perAddress; i++) {
      const s = (await licence(`2001:db8:77:1:${(i + 1).toString(16)}::1`)).status;
      statuses.set(s, (statuses.get(s) ?? 0) + 1);
    }
    expect([...statuses]).toEqual([[403, DRM_LICENCE_LIMITS.perAddress]]);
    const refused = await licence("2001:db8:77:1:ffff:ffff:ffff:ffff");
    expect(refused.status).toBe(429);
    expect((await failed(refused)).error.code).toBe("RATE_LIMITED");
    expect((await licence("2001:db8:77:2::1")).status).toBe(403);
    expect((await licence("192.0.2.7")).status).toBe(403);
  }, 120_000);
});
