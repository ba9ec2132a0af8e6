/**
 * Issue 27 on the settings screen, in Debian's Chromium: the owner creates a
 * signing key (its private key shown once, and it signs a token the media
 * route accepts), sees it listed by id only, deletes it with confirmation;
 * creates a referrer restriction and deletes it; sees the playback policy on a
 * stream's and a video's page; sets the organization's default policy, which
 * the creation forms preselect, and picks a policy per video and stream.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { importPKCS8, SignJWT } from "jose";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { settingsScreen } from "./support/settings-browser.ts";
import { ok } from "./support/api.ts";

// Starts a service and Chromium: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

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

    const id = listed.data.items[0]!.id;
    await owner.locator("tbody tr", { hasText: "*.example.com" }).getByRole("link", { name: "Delete" }).click();
    await owner.getByRole("button", { name: "Yes, delete restriction" }).click();
    await owner.waitForURL(/\/settings\/restrictions\?done=deleted$/);
    expect(await owner.content()).not.toContain(id);
    expect((await screen.t.api(`/playback-restrictions/${id}/`)).status).toBe(404);
  }, 120_000);

  test("the organization's default policy is set on the Organization page and preselected by the creation forms; each form's choice wins", async () => {
    const policyOf = async () => (await ok(screen.t.api("/organization/"), "getOrganization")).data.organization.playback.policy;
    const setDefault = async (policy: string) => {
      await owner.goto(`${screen.t.base}/settings/organization`);
      await owner.getByLabel("Playback policy of new videos and streams").selectOption(policy);
      await owner.getByRole("button", { name: "Save settings" }).click();
      await owner.waitForURL(/\?done=saved$/);
    };
    await setDefault("signed");
    expect(await policyOf()).toBe("signed");
    await owner.goto(`${screen.t.base}/settings/live`);
    expect(await owner.locator("#stream-policy").inputValue()).toBe("signed");
    await owner.goto(`${screen.t.base}/settings/videos`);
    expect(await owner.locator("#url-policy").inputValue()).toBe("signed");
    expect(await owner.locator("#upload-policy").inputValue()).toBe("signed");
    await setDefault("public");
    expect(await policyOf()).toBe("public");

    // Against the (public) default: a signed stream and a signed video from the forms.
    await owner.goto(`${screen.t.base}/settings/live`);
    expect(await owner.locator("#stream-policy").inputValue()).toBe("public");
    await owner.locator("#stream-title").fill("signed from the form");
    await owner.locator("#stream-policy").selectOption("signed");
    await owner.getByRole("button", { name: "Create stream" }).click();
    await owner.waitForURL(/\/settings\/live\/ls_\w+$/);
    expect(await owner.locator("#playback-policy").innerText()).toContain("signed");
    const streamId = new URL(owner.url()).pathname.split("/").pop()!;
    expect((await ok(screen.t.api(`/livestreams/${streamId}/`), "getLivestream")).data.stream.playback_policy).toBe("signed");

    await owner.goto(`${screen.t.base}/settings/videos`);
    await owner.locator("#source-url").fill("https://example.com/signed-from-the-form.mp4");
    await owner.locator("#url-policy").selectOption("signed");
    await owner.getByRole("button", { name: "Add video" }).click();
    await owner.waitForURL(/\/settings\/videos\/vid_\w+$/);
    expect(await owner.locator("#playback-policy").innerText()).toContain("signed");
    const videoId = new URL(owner.url()).pathname.split("/").pop()!;
    expect((await ok(screen.t.api(`/videos/${videoId}/`), "getVideo")).data.video.playback_policy).toBe("signed");
  }, 120_000);
});
