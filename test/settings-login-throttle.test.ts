/**
 * Sign-in throttling per client address (issue 13 audit): 20 attempts per
 * address per window whatever the emails, and behind a reverse proxy
 * (TRUST_PROXY=1) the address is the client's from X-Forwarded-For, so two
 * clients behind one proxy are limited separately. Plain HTTP form posts, as
 * a browser's same-origin POST (Origin header) sends them.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { LOGIN_LIMIT_PER_ACCOUNT, LOGIN_LIMIT_PER_ADDRESS } from "../src/settings/auth-pages.ts";
import { peopleFor } from "../src/settings/session-guard.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);
// Windows of an hour: twenty argon2 sign-ins on a loaded 2-core machine can take more than a minute, and a window that
// ends mid-test would let the 21st through.

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
    const t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "3600000" } });
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
    const t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "3600000", TRUST_PROXY: "1" } });
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

describe("sign-in throttling cannot lock an owner out, and counts IPv6 by /64 (issue 23 item 6)", () => {
  const signIn = (t: TestService, email: string, password: string, from: string) =>
    fetch(`${t.base}/settings/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: t.base, "x-forwarded-for": from },
      body: new URLSearchParams({ email, password }).toString(),
    });

  test("someone who knows the email spends their own allowance: refused at their address, the owner signs in from theirs", async () => {
    const t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "3600000", TRUST_PROXY: "1" } });
    services.push(t);
    const people = peopleFor(t.service.database);
    const { token } = await people.invite(t.orgId, "victim@example.com", "developer");
    expect(await people.completeSetup(token!, "the victim's password")).not.toBeNull();

    const attacker: number[] = [];
    for (let i = 0; i <= LOGIN_LIMIT_PER_ACCOUNT; i++) attacker.push((await signIn(t, "victim@example.com", `guess ${i}`, "198.51.100.66")).status);
    expect(attacker).toEqual([...Array(LOGIN_LIMIT_PER_ACCOUNT).fill(401), 429]);
    // Another IPv6 address of the attacker's /64 is the same client.
    expect((await signIn(t, "victim@example.com", "guess again", "2001:db8:aa:bb::1")).status).toBe(401);
    for (let i = 0; i < LOGIN_LIMIT_PER_ACCOUNT; i++) await signIn(t, "victim@example.com", `v6 guess ${i}`, `2001:db8:aa:bb::${i + 2}`);
    expect((await signIn(t, "victim@example.com", "the victim's password", "2001:db8:aa:bb:ffff:1:2:3")).status).toBe(429);
    // The owner of the email, from their own address, is not locked out.
    const owner = await signIn(t, "victim@example.com", "the victim's password", "203.0.113.10");
    expect(owner.status).toBe(303);
    expect(owner.headers.get("set-cookie")).toContain("vidlive_session=");
  }, 240_000);

  test(`per address: ${LOGIN_LIMIT_PER_ADDRESS} attempts from one IPv6 /64 whatever the host part, then 429; the next /64 is another client`, async () => {
    const t = await startTestService({ env: { RATE_LIMIT_WINDOW_MS: "3600000", TRUST_PROXY: "1" } });
    services.push(t);
    const statuses: number[] = [];
    for (let i = 0; i < LOGIN_LIMIT_PER_ADDRESS; i++) statuses.push((await attempt(t, `p${i}@example.com`, { "x-forwarded-for": `2001:db8:1:2::${(i + 1).toString(16)}` })).status);
    expect(statuses).toEqual(Array(LOGIN_LIMIT_PER_ADDRESS).fill(401));
    expect((await attempt(t, "q@example.com", { "x-forwarded-for": "2001:0db8:0001:0002:abcd::9" })).status).toBe(429);
    expect((await attempt(t, "q@example.com", { "x-forwarded-for": "2001:db8:1:3::1" })).status).toBe(401);
  }, 240_000);
});
