/**
 * Issue 13, point 1 (people and sessions) and the CSRF rules of every form,
 * in Debian's Chromium: the owner's setup link from the CLI, sign-in and
 * sign-out, the session cookie's flags, login throttling, cross-site POSTs.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { LOGIN_LIMIT_PER_ACCOUNT } from "../src/settings/auth-pages.ts";
import { peopleFor } from "../src/settings/session-guard.ts";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { cli, fillSignIn, settingsScreen, useSetupLink } from "./support/settings-browser.ts";
import { startTestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const OWNER = "owner@example.com";
const PASSWORD = "a long owner password";
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

describe.skipIf(!hasChromium)("settings: people and sessions", () => {
  const screen = settingsScreen();
  let orgId: string;
  let apiKey: string;

  const login = (email: string, password: string, headers: Record<string, string> = { origin: screen.t.base }) =>
    fetch(`${screen.t.base}/settings/login`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: form({ email, password }) });

  test("the owner's one-time link from `cli org create --owner-email` sets the password and signs in; sign out and sign in again", async () => {
    const created = await cli(screen.t, "org", "create", "--name", "Acme Video", "--owner-email", OWNER, "--json");
    expect(created.code).toBe(0);
    const out = JSON.parse(created.out);
    orgId = out.org_id;
    apiKey = out.api_key;
    expect(out.owner_setup_url).toStartWith(`${screen.t.base}/settings/setup/`);

    const context = await screen.browser.newContext();
    const page = await context.newPage();
    await useSetupLink(page, out.owner_setup_url, PASSWORD);
    expect(new URL(page.url()).pathname).toBe("/settings/keys");
    await expect(page.getByRole("heading", { name: "API keys" }).isVisible()).resolves.toBe(true);
    expect(await page.locator("header").innerText()).toContain("Acme Video");
    expect(await page.locator("header").innerText()).toContain(OWNER);
    for (const name of ["API keys", "Webhooks", "Videos", "Live streams", "Organization", "Members"]) {
      expect(await page.getByRole("navigation").getByRole("link", { name, exact: true }).count()).toBe(1);
    }

    // The cookie as the browser stored it.
    const [cookie] = (await context.cookies()).filter((c) => c.name === "vidlive_session");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/settings", secure: false });

    // The link works once.
    const again = await fetch(out.owner_setup_url);
    expect(again.status).toBe(410);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${screen.t.base}/settings/login`);
    await page.goto(`${screen.t.base}/settings/keys`);
    expect(new URL(page.url()).pathname).toBe("/settings/login");

    await fillSignIn(page, screen.t.base, "Owner@Example.com", PASSWORD);
    expect(new URL(page.url()).pathname).toBe("/settings/keys");
    await context.close();
  });

  test("a wrong password and an unknown email get the same message", async () => {
    const page = await screen.browser.newPage();
    await fillSignIn(page, screen.t.base, OWNER, "not the password");
    const wrong = await page.getByRole("alert").innerText();
    await fillSignIn(page, screen.t.base, "nobody@example.com", "not the password");
    expect(await page.getByRole("alert").innerText()).toBe(wrong);
    expect(wrong).toBe("Wrong email or password.");
    expect(new URL(page.url()).pathname).toBe("/settings/login");
    await page.close();
  });

  test(`sign-in is throttled per account and address: after ${LOGIN_LIMIT_PER_ACCOUNT} attempts from one address even the right password gets 429 there`, async () => {
    // Invited by the operator: `cli org invite` prints the member's setup link.
    const invited = await cli(screen.t, "org", "invite", "--org", orgId, "--email", "target@example.com", "--role", "viewer", "--json");
    expect(invited.code).toBe(0);
    const { setup_url } = JSON.parse(invited.out);
    expect(setup_url).toStartWith(`${screen.t.base}/settings/setup/`);
    expect(await peopleFor(screen.t.service.database).completeSetup(setup_url.split("/").at(-1), "the right password")).not.toBeNull();
    const statuses: number[] = [];
    for (let i = 0; i < LOGIN_LIMIT_PER_ACCOUNT; i++) statuses.push((await login("target@example.com", `guess number ${i}`)).status);
    expect(statuses).toEqual(Array(LOGIN_LIMIT_PER_ACCOUNT).fill(401));
    const refused = await login("target@example.com", "the right password");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.text()).toContain("Too many sign-in attempts");
    // Another account from the same address is not locked by it.
    expect((await login(OWNER, PASSWORD)).status).toBe(303);
    await screen.t.service.rateLimiter.reset(["login:pair:127.0.0.1 target@example.com", "login:addr:127.0.0.1"]);
    expect((await login("target@example.com", "the right password")).status).toBe(303);
  });

  test("a form on another origin posting to /settings is refused (403) and changes nothing; so is a same-origin POST without the token", async () => {
    const context = await screen.browser.newContext();
    const page = await context.newPage();
    await fillSignIn(page, screen.t.base, OWNER, PASSWORD);
    const prefix = apiKey.split("_")[2]!;
    const revokeUrl = `${screen.t.base}/settings/keys/${prefix}/revoke`;

    // 1. A page elsewhere (another port: another origin, the same site, so SameSite=Lax still sends the cookie) auto-submits a revoke form.
    const evil = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        new Response(
          `<!doctype html><form id="f" method="post" action="${revokeUrl}"><input name="confirm" value="yes"><input name="_csrf" value="guessed"></form><script>document.getElementById("f").submit()</script>`,
          {
            headers: { "content-type": "text/html" },
          },
        ),
    });
    try {
      const answered = page.waitForResponse((r) => r.url() === revokeUrl);
      await page.goto(`http://127.0.0.1:${evil.port}/`);
      const res = await answered;
      expect(res.status()).toBe(403);
      await page.waitForLoadState();
      expect(await page.content()).toContain("Nothing was changed");
    } finally {
      evil.stop(true);
    }
    expect((await screen.t.api("/organization/", { key: apiKey })).status).toBe(200);

    // 2. From the settings page itself, but without the form token.
    await page.goto(`${screen.t.base}/settings/keys`);
    const status = await page.evaluate(
      async (url) => (await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "confirm=yes", redirect: "manual" })).status,
      revokeUrl,
    );
    expect(status).toBe(403);
    expect((await screen.t.api("/organization/", { key: apiKey })).status).toBe(200);

    // 3. Sign-in from another origin (login CSRF) is refused too.
    expect((await login(OWNER, PASSWORD, { origin: "https://evil.example" })).status).toBe(403);
    expect((await login(OWNER, PASSWORD, { "sec-fetch-site": "cross-site" })).status).toBe(403);
    await context.close();
  });

  test("Set-Cookie: HttpOnly, SameSite=Lax, Path=/settings; Secure when BASE_URL is https", async () => {
    const res = await login(OWNER, PASSWORD);
    expect(res.status).toBe(303);
    const plain = res.headers.get("set-cookie")!;
    expect(plain).toContain("HttpOnly");
    expect(plain).toContain("SameSite=Lax");
    expect(plain).toContain("Path=/settings");
    expect(plain).not.toContain("Secure");

    const https = await startTestService({ listen: false, env: { BASE_URL: "https://video.example.com" } });
    try {
      const { token } = await peopleFor(https.service.database).createOwner(https.orgId, "secure@example.com");
      const set = await https.service.app.handle(
        new Request(`https://video.example.com/settings/setup/${token}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://video.example.com" },
          body: form({ password: PASSWORD, confirm: PASSWORD }),
        }),
      );
      expect(set.status).toBe(303);
      const secure = set.headers.get("set-cookie")!;
      expect(secure).toMatch(/^vidlive_session=[A-Za-z0-9]{43};/);
      for (const flag of ["HttpOnly", "SameSite=Lax", "Path=/settings", "Secure"]) expect(secure).toContain(flag);
    } finally {
      await https.stop();
    }
  });
});
