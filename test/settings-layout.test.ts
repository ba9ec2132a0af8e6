/**
 * Issue 13 audit, the screen's small mechanics in Debian's Chromium: the copy
 * buttons' fallback without a clipboard API (plain http on another host).
 */
import { describe, expect, test } from "bun:test";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { settingsScreen } from "./support/settings-browser.ts";

if (!hasChromium) console.warn(CHROMIUM_MISSING);

describe.skipIf(!hasChromium)("settings: layout and mechanics", () => {
  const screen = settingsScreen();

  test("without navigator.clipboard, a copy button selects the whole value of the <input> before it", async () => {
    const created = (await (await screen.t.api("/livestreams/", { method: "POST", json: { title: "Copy me" } })).json()) as { data: { stream: { id: string; rtmp_url: string } } };
    const page = await screen.signInAs("developer");
    // As on plain http from another host: no clipboard API at all.
    await page.addInitScript("Object.defineProperty(navigator, 'clipboard', { value: undefined, configurable: true })");
    await page.goto(`${screen.t.base}/settings/live/${created.data.stream.id}`);
    expect(await page.evaluate("typeof navigator.clipboard")).toBe("undefined");
    const button = page.getByRole("button", { name: "Copy RTMP URL" });
    await button.click();
    await expect(button.innerText()).resolves.toBe("Press Ctrl+C");
    const selected = await page.evaluate(`(() => {
      const el = document.activeElement;
      return el instanceof HTMLInputElement ? { id: el.id, text: el.value.slice(el.selectionStart, el.selectionEnd) } : null;
    })()`);
    expect(selected).toEqual({ id: "rtmp-url", text: created.data.stream.rtmp_url });
    await page.context().close();
  }, 30_000);
});
