/**
 * Issue 13, points 1 and 3, in Debian's Chromium: the owner manages the
 * organization's API key on the screen (the key shown once, last used,
 * revoke with confirmation → 401 at once, a second live key refused with
 * API_KEY_EXISTS explained), on the same records as the CLI; members are
 * refused API keys and Members with a 403 page.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { cli, settingsScreen, useSetupLink } from "./support/settings-browser.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

describe.skipIf(!hasChromium)("settings: API keys and members", () => {
  const screen = settingsScreen();
  let owner: Page;

  beforeAll(async () => {
    owner = await screen.signInAs("owner");
  });

  const call = (key: string) => screen.t.api("/organization/", { key }).then((r) => r.status);
  const rowOf = (page: Page, name: string) => page.locator("tbody tr", { has: page.getByRole("cell", { name, exact: true }) });

  async function revoke(page: Page, name: string) {
    await rowOf(page, name).getByRole("link", { name: "Revoke" }).click();
    await page.getByRole("button", { name: "Yes, revoke key" }).click();
    await page.waitForURL(/\/settings\/keys\?done=revoked$/);
  }

  test("the list shows name, prefix, created, last used and status, never the secret; a second live key is refused with API_KEY_EXISTS and the rotation", async () => {
    await owner.goto(`${screen.t.base}/settings/keys`);
    const prefix = screen.t.apiKey.split("_")[2]!;
    const secret = screen.t.apiKey.split("_")[3]!;
    const row = rowOf(owner, "default");
    expect(await row.innerText()).toContain(`sk_live_${prefix}_`);
    expect(await row.innerText()).toContain("live");
    expect(await owner.content()).not.toContain(secret);

    await owner.getByLabel("Name").fill("second server");
    await owner.getByRole("button", { name: "Create API key" }).click();
    const alert = await owner.getByRole("alert").innerText();
    expect(alert).toContain("API_KEY_EXISTS");
    expect(alert).toContain("revoke the current key, then create a new one");
    expect(await owner.locator("tbody tr").count()).toBe(1);
    expect(await call(screen.t.apiKey)).toBe(200);
  });

  test("revoke asks for confirmation, and the very next API call with the key is 401", async () => {
    await owner.goto(`${screen.t.base}/settings/keys`);
    await rowOf(owner, "default").getByRole("link", { name: "Revoke" }).click();
    expect(await owner.getByRole("main").innerText()).toContain("fail with 401");
    expect(await call(screen.t.apiKey)).toBe(200);
    await owner.getByRole("button", { name: "Yes, revoke key" }).click();
    await owner.waitForURL(/\/settings\/keys\?done=revoked$/);
    expect(await call(screen.t.apiKey)).toBe(401);
    expect(await rowOf(owner, "default").innerText()).toContain("revoked");
  });

  test("create shows the key once with a copy button; it calls the API (200); last used appears; the CLI sees the same key; revoke → 401", async () => {
    await owner.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: screen.t.base });
    await owner.goto(`${screen.t.base}/settings/keys`);
    await owner.getByLabel("Name").fill("ci runner");
    await owner.getByRole("button", { name: "Create API key" }).click();
    const key = (await owner.locator("#new-api-key").innerText()).trim();
    expect(key).toMatch(/^sk_live_[A-Za-z0-9]+_[A-Za-z0-9]+$/);
    await owner.getByRole("button", { name: "Copy key" }).click();
    expect(await owner.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText())).toBe(key);
    expect(await rowOf(owner, "ci runner").innerText()).toContain("never");

    expect(await call(key)).toBe(200);
    // Shown once: a reload lists the key by its prefix only.
    await owner.goto(`${screen.t.base}/settings/keys`);
    expect(await owner.content()).not.toContain(key.split("_")[3]!);
    // Written fire-and-forget after the call: reload until it shows (at most a few seconds).
    const lastUsed = rowOf(owner, "ci runner").locator("td").nth(3);
    for (let i = 0; i < 50 && (await lastUsed.locator("time").count()) === 0; i++) {
      await Bun.sleep(100);
      await owner.reload();
    }
    expect(await lastUsed.locator("time").count()).toBe(1);

    const shown = await cli(screen.t, "key", "show", "--org", screen.t.orgId, "--json");
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.out).keys.find((k: { name: string }) => k.name === "ci runner")).toMatchObject({ prefix: key.split("_")[2], status: "live" });

    await revoke(owner, "ci runner");
    expect(await call(key)).toBe(401);
  });

  test("a member (invited on Members, password set through the link) is refused API keys and Members with a 403 page; removing them ends their session", async () => {
    await owner.goto(`${screen.t.base}/settings/members`);
    await owner.getByLabel("Email").fill("dev@example.com");
    await owner.getByLabel("Role").selectOption("developer");
    await owner.getByRole("button", { name: "Invite member" }).click();
    const link = (await owner.locator("#setup-link").innerText()).trim();
    expect(link).toStartWith(`${screen.t.base}/settings/setup/`);
    expect(await rowOf(owner, "dev@example.com").innerText()).toContain("invited");

    const context = await screen.browser.newContext();
    const dev = await context.newPage();
    await useSetupLink(dev, link, "developer password");
    expect(new URL(dev.url()).pathname).toBe("/settings/videos");
    expect(await dev.getByRole("navigation").getByRole("link", { name: "Members" }).count()).toBe(0);

    for (const path of ["/settings/keys", "/settings/members"]) {
      const res = await dev.goto(`${screen.t.base}${path}`);
      expect(res!.status()).toBe(403);
      expect(await dev.getByRole("main").innerText()).toContain("You do not have access");
    }
    // A POST with the member's own valid form token is refused as well, and creates nothing.
    const csrf = await dev.locator('input[name="_csrf"]').first().inputValue();
    const status = await dev.evaluate(
      async ({ url, csrf }) =>
        (await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ _csrf: csrf, name: "sneaky" }) })).status,
      { url: `${screen.t.base}/settings/keys`, csrf },
    );
    expect(status).toBe(403);
    expect((await screen.t.service.orgs.listKeys(screen.t.orgId)).some((k) => k.name === "sneaky")).toBe(false);

    await owner.goto(`${screen.t.base}/settings/members`);
    await rowOf(owner, "dev@example.com").getByRole("link", { name: "Remove" }).click();
    await owner.getByRole("button", { name: "Yes, remove member" }).click();
    await owner.waitForURL(/done=removed$/);
    expect(await rowOf(owner, "dev@example.com").count()).toBe(0);
    await dev.goto(`${screen.t.base}/settings/organization`);
    expect(new URL(dev.url()).pathname).toBe("/settings/login");
    await context.close();
  });

  test("Organization shows the ladder, downloads, DRM state, limits and usage", async () => {
    await owner.goto(`${screen.t.base}/settings/organization`);
    const main = await owner.getByRole("main").innerText();
    for (const s of ["Transcoding ladder", "360p", "720p", "1080p", "Downloads", "mkv", "DRM not available", "API requests per minute", "Current usage"]) expect(main).toContain(s);
    expect(await owner.locator("#slots-used").innerText()).toBe(`0 of ${screen.t.service.config.liveSlotsPerOrg}`);
  });
});
