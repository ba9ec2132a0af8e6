import { describe, expect, test } from "bun:test";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { playerPlays, settingsScreen } from "./support/settings-browser.ts";
import { ok } from "./support/api.ts";

if (!hasChromium) console.warn(CHROMIUM_MISSING);
const native = await hasNativeFfmpeg();
const FIXTURE = new URL("../fixtures/av-360p-2s.mp4", import.meta.url).pathname;

/** A DRM video's page plays with shaka and the ClearKey licence URL the page was given (as the API's GET hands out). */
describe.skipIf(!hasChromium || !native)("settings screen: a DRM video's player (issue 13 point 5)", () => {
  const screen = settingsScreen({
    env: { MEDIA_BACKEND: "native" },
    prepare: (t) => t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, features: { ...s.features, drm: true } })),
  });

  test("uploaded from the page with DRM checked, it plays in shaka through the licence service", async () => {
    const page = await screen.signInAs("admin");
    await page.goto(`${screen.t.base}/settings/videos`);
    await page.getByLabel("Video file").setInputFiles(FIXTURE);
    await page.locator("#upload-drm").check();
    await page.getByRole("button", { name: "Upload" }).click();
    await page.waitForURL((u) => u.searchParams.get("done") === "uploaded");
    const id = (await page.locator("tr[data-video-id]").getAttribute("data-video-id"))!;
    const video = await waitFor(
      async () => {
        const v = (await ok(screen.t.api(`/videos/${id}/`), "getVideo")).data.video;
        return v.status !== "TRANSCODING" ? v : undefined;
      },
      { timeoutMs: 60_000, what: "DRM video settled" },
    );
    expect(video).toMatchObject({ status: "COMPLETED", drm: true });

    const licence: string[] = [];
    page.on("request", (r) => {
      if (r.method() === "POST" && r.url().includes("/drm/clearkey/")) licence.push(r.url());
    });
    await page.goto(`${screen.t.base}/settings/videos/${id}`);
    await playerPlays(page);
    expect(await page.evaluate("window.settingsPlayer.drmInfo().keySystem")).toBe("org.w3.clearkey");
    expect(licence.length).toBeGreaterThan(0);
    expect(licence[0]).toContain(`/drm/clearkey/${id}/license?token=`);
    await page.context().close();
  }, 90_000);
});
