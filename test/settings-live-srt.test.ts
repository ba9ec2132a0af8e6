import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { settingsScreen } from "./support/settings-browser.ts";
import { getStream } from "./support/streams.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

describe.skipIf(!hasChromium)("settings screen: a stream's SRT URL (issue 26)", () => {
  const screen = settingsScreen({});

  test("a role that may manage streams sees srt_url with a copy button; a viewer does not", async () => {
    const page = await screen.signInAs("developer");
    await page.goto(`${screen.t.base}/settings/live`);
    await page.getByLabel("Title", { exact: true }).fill("Over SRT");
    await page.getByRole("button", { name: "Create stream" }).click();
    await page.waitForURL((u) => /^\/settings\/live\/[^/]+$/.test(u.pathname));
    const id = page.url().split("/").pop()!;
    const srtUrl = await page.getByLabel("SRT URL", { exact: true }).inputValue();
    expect(srtUrl).toBe((await getStream(screen.t, id)).srt_url!);
    expect(srtUrl).toMatch(/^srt:\/\/.+:\d+\?streamid=publish:/);
    expect(await page.getByRole("button", { name: "Copy SRT URL" }).isVisible()).toBe(true);
    await page.context().close();

    const viewer = await screen.signInAs("viewer");
    await viewer.goto(`${screen.t.base}/settings/live/${id}`);
    expect(await viewer.locator("#stream").getAttribute("data-status")).toBe("READY_TO_STREAM");
    expect(await viewer.getByLabel("SRT URL", { exact: true }).count()).toBe(0);
    expect(await viewer.content()).not.toContain("streamid=publish:");
    await viewer.context().close();
  });
});
