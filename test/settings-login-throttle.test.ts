/**
 * Sign-in throttling per client address (issue 13 audit): 20 attempts per
 * address per window whatever the emails, and behind a reverse proxy
 * (TRUST_PROXY=1) the address is the client's from X-Forwarded-For, so two
 * clients behind one proxy are limited separately. Plain HTTP form posts, as
 * a browser's same-origin POST (Origin header) sends them.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { LOGIN_LIMIT_PER_ADDRESS } from "../src/settings/auth-pages.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

const services: TestService[] = [];
afterAll(async () => {
  for (const t of services) await t.stop();
});

const attempt = (t: TestService, email: string, headers: Record<string, string> = {}) =>
  fetch(`${t.base}/settings/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: t.base, ...headers },
    body: new URLSearchParams({ email, password: "a wrong password" }).toString(),
  });

async function spend(t: TestService, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < LOGIN_LIMIT_PER_ADDRESS; i++) statuses.push((await attempt(t, `person-${crypto.randomUUID()}@example.com`, headers)).status);
  return statuses;
}

describe("settings sign-in throttling per address", () => {
  test(`${LOGIN_LIMIT_PER_ADDRESS} attempts with different emails from one address, then the throttled page; X-Forwarded-For ignored without TRUST_PROXY`, async () => {
    const t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "60000" } });
    services.push(t);
    expect(await spend(t, { "x-forwarded-for": "203.0.113.1" })).toEqual(Array(LOGIN_LIMIT_PER_ADDRESS).fill(401));
    // A new email, and a forged header claiming another client: still this address.
    const refused = await attempt(t, "fresh@example.com", { "x-forwarded-for": "203.0.113.2" });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const page = await refused.text();
    expect(page).toContain("Too many attempts");
    expect(page).toContain("Too many sign-in attempts");
  }, 240_000);

  test("TRUST_PROXY=1: two clients behind one proxy are limited separately; entries left of the proxy's are not trusted", async () => {
    const t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "60000", TRUST_PROXY: "1" } });
    services.push(t);
    expect(t.service.config.trustProxy).toBe(1);
    expect(await spend(t, { "x-forwarded-for": "203.0.113.5" })).toEqual(Array(LOGIN_LIMIT_PER_ADDRESS).fill(401));
    expect((await attempt(t, "next@example.com", { "x-forwarded-for": "203.0.113.5" })).status).toBe(429);
    // The same client forging an extra entry on the left: the proxy's (rightmost) entry still names it.
    expect((await attempt(t, "next@example.com", { "x-forwarded-for": "198.51.100.9, 203.0.113.5" })).status).toBe(429);
    // Another client through the same proxy is not locked out.
    expect((await attempt(t, "other@example.com", { "x-forwarded-for": "203.0.113.6" })).status).toBe(401);
  }, 240_000);
});
