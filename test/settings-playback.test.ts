/**
 * Issue 27 on the settings screen, in Debian's Chromium: the owner creates a
 * signing key (its private key shown once, and it signs a token the media
 * route accepts), sees it listed by id only, deletes it with confirmation;
 * creates a referrer restriction; sees the playback policy on a stream's page.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { importPKCS8, SignJWT } from "jose";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { settingsScreen } from "./support/settings-browser.ts";
import { ok } from "./support/api.ts";

if (!hasChromium) console.warn(CHROMIUM_MISSING);

describe.skipIf(!hasChromium)("settings: signing keys, restrictions, policy", () => {
  const screen = settingsScreen();
  let owner: Page;

  beforeAll(async () => {
    owner = await screen.signInAs("owner");
  }, 120_000);

  test("a signing key: private key shown once and usable, listed by id, deleted after confirmation", async () => {
    const stream = await ok(screen.t.api("/livestreams/", { method: "POST", json: { title: "signed on screen", playback_policy: "signed" } }), "createLivestream");
    const { id: streamId, hls_url: hlsUrl } = stream.data.stream;

    await owner.goto(`${screen.t.base}/settings/signing-keys`);
    await owner.getByRole("button", { name: "Create signing key" }).click();
    const privateKey = (await owner.locator("#new-signing-key-private").innerText()).trim();
    const keyId = ((await owner.getByRole("heading", { name: /Private key of/ }).innerText()).match(/sk_\w+/) ?? [""])[0];
    expect(keyId).toMatch(/^sk_/);
    const jwt = await new SignJWT({ sub: streamId, aud: "v", exp: Math.floor(Date.now() / 1000) + 600 })
      .setProtectedHeader({ alg: "RS256", kid: keyId })
      .sign(await importPKCS8(Buffer.from(privateKey, "base64").toString("ascii"), "RS256"));
    // Accepted by the gate (404: nothing is published yet), where no token is refused.
    expect((await fetch(`${hlsUrl}?token=${jwt}`)).status).toBe(404);
    expect((await fetch(hlsUrl)).status).toBe(403);

    await owner.goto(`${screen.t.base}/settings/signing-keys`);
    expect(await owner.locator("tbody").innerText()).toContain(keyId);
    expect(await owner.content()).not.toContain(privateKey.slice(40, 120));
    await owner.locator("tbody tr", { hasText: keyId }).getByRole("link", { name: "Delete" }).click();
    await owner.getByRole("button", { name: "Yes, delete key" }).click();
    await owner.waitForURL(/\/settings\/signing-keys\?done=deleted$/);
    expect(await owner.content()).not.toContain(keyId);
    const refused = await fetch(`${hlsUrl}?token=${jwt}`);
    expect(refused.status).toBe(403);

    await owner.goto(`${screen.t.base}/settings/live/${streamId}`);
    expect(await owner.locator("#playback-policy").innerText()).toContain("signed");
  }, 120_000);

  test("a restriction: created from the form, refused domains named, listed", async () => {
    await owner.goto(`${screen.t.base}/settings/restrictions`);
    await owner.getByLabel("Allowed domains").fill("bad domain, example.com");
    await owner.getByRole("button", { name: "Create restriction" }).click();
    expect(await owner.getByRole("alert").innerText()).toContain("referrer.allowed_domains[0]");
    await owner.getByLabel("Allowed domains").fill("example.com, *.example.com");
    await owner.getByRole("button", { name: "Create restriction" }).click();
    expect(await owner.locator("tbody").innerText()).toContain("example.com, *.example.com");
    const listed = await ok(screen.t.api("/playback-restrictions/"), "listPlaybackRestrictions");
    expect(listed.data.items[0]!.referrer).toEqual({ allowed_domains: ["example.com", "*.example.com"], allow_no_referrer: false });
  }, 120_000);
});
