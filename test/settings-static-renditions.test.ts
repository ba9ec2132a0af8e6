/**
 * Issue 27 item 4 on the settings screen and the CLI, in Debian's Chromium: the owner sets the
 * organization's default static renditions on its page (`cli org set --static-renditions` does the same and
 * refuses a name outside the ladder); a video registered without its own gets them, and its page lists
 * each with its status and a link to the file.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { cli, settingsScreen } from "./support/settings-browser.ts";
import { ok } from "./support/api.ts";

// Starts processes and a browser: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

describe.skipIf(!hasChromium)("settings: static renditions", () => {
  const files = startFileServer();
  const screen = settingsScreen({ env: { MEDIA_BACKEND: "native" } });
  afterAll(() => files.stop());

  test("the CLI sets and refuses the default; the organization page sets it; a video's page lists each with status and link", async () => {
    const refused = await cli(screen.t, "org", "set", "--org", screen.t.orgId, "--static-renditions", "2160p");
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('--static-renditions: "2160p" is not one of highest, audio-only, 360p, 720p, 1080p');
    const set = await cli(screen.t, "org", "set", "--org", screen.t.orgId, "--static-renditions", "720p");
    expect(set.code).toBe(0);
    expect(JSON.parse(set.out).settings.staticRenditions).toEqual(["720p"]);

    const owner = await screen.signInAs("owner");
    await owner.goto(`${screen.t.base}/settings/organization`);
    await owner.getByLabel("720p: an MP4 of that rendition (in the ladder)").uncheck();
    await owner.getByLabel("highest: an MP4 of the top rendition produced").check();
    await owner.getByLabel("audio-only: an M4A of the audio").check();
    await owner.getByRole("button", { name: "Save settings" }).click();
    await owner.waitForURL(/\/settings\/organization\?done=saved$/);
    const org = await ok(screen.t.api("/organization/"), "getOrganization");
    expect(org.data.organization.static_renditions).toEqual(["highest", "audio-only"]);

    const created = await ok(screen.t.api("/videos/", { method: "POST", json: { source_url: files.url("av-360p-2s.mp4") } }), "createVideo");
    const id = created.data.asset.public_id;
    await waitFor(async () => ((await ok(screen.t.api(`/videos/${id}/`), "getVideo")).data.video.status === "COMPLETED" ? true : undefined), {
      timeoutMs: 110_000,
      what: `video ${id} completed`,
    });
    await owner.goto(`${screen.t.base}/settings/videos/${id}`);
    const section = owner.getByRole("region", { name: "Static renditions" });
    expect(await section.locator('tr[data-static="highest"]').innerText()).toContain("ready");
    expect(await section.locator('tr[data-static="audio-only"]').innerText()).toContain("ready");
    const href = await section.locator('tr[data-static="audio-only"] a').getAttribute("href");
    expect(href).toEndWith("/static/audio.m4a");
    const file = await fetch(href!);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("audio/mp4");
  });
});
