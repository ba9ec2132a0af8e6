/**
 * Issue 13 audit, the screen's small mechanics in Debian's Chromium: the copy
 * buttons' fallback without a clipboard API (plain http on another host).
 */
import { describe, expect, test } from "bun:test";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { type Person, settingsScreen } from "./support/settings-browser.ts";

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
  }, 120_000);
});

describe.skipIf(!hasChromium)("settings: phone width and keyboard", () => {
  const screen = settingsScreen();
  const NAV = ["API keys", "Webhooks", "Videos", "Live streams", "Organization", "Members"];
  const PAGES = ["keys", "webhooks", "videos", "live", "organization", "members"];
  let ownerPerson: Person | undefined;
  /** The organization has one owner: made once, signed in per test. */
  const signInOwner = async () => screen.signIn((ownerPerson ??= await screen.addMember("owner")));

  test("at 390 px every navigation link is inside the viewport, on every section", async () => {
    const owner = await signInOwner();
    await owner.setViewportSize({ width: 390, height: 844 });
    for (const section of PAGES) {
      await owner.goto(`${screen.t.base}/settings/${section}`);
      for (const name of NAV) {
        const link = owner.getByRole("navigation").getByRole("link", { name, exact: true });
        expect(await link.isVisible()).toBe(true);
        const box = (await link.boundingBox())!;
        expect({ section, name, inside: box.x >= 0 && box.y >= 0 && box.x + box.width <= 390 && box.y + box.height <= 844 }).toEqual({ section, name, inside: true });
      }
      // Nothing scrolls sideways.
      expect(await owner.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    }
    await owner.context().close();
  }, 60_000);

  test("keyboard: Tab reaches every navigation link and the main form's controls; every field has a label", async () => {
    const owner = await signInOwner();
    for (const section of PAGES) {
      await owner.goto(`${screen.t.base}/settings/${section}`);
      // Every visible input, select and textarea is found by its label (what getByLabel and screen readers use).
      const names = (await owner.evaluate(`Array.from(document.querySelectorAll("input, select, textarea"))
        .filter((el) => el.type !== "hidden" && el.getClientRects().length > 0)
        .map((el) => ({ id: el.id, label: el.getAttribute("aria-label") || (el.labels && el.labels[0] ? el.labels[0].textContent.trim() : "") }))`)) as Array<{ id: string; label: string }>;
      expect(names.length).toBeGreaterThan(0);
      for (const n of names) {
        expect({ section, id: n.id, labelled: n.label !== "" }).toEqual({ section, id: n.id, labelled: true });
        expect(await owner.getByLabel(n.label).count()).toBeGreaterThan(0);
      }
    }

    // Tab from the top of the Webhooks page: the navigation, then the creation form's fields and its button.
    await owner.goto(`${screen.t.base}/settings/webhooks`);
    const reached = new Set<string>();
    for (let i = 0; i < 60; i++) {
      await owner.keyboard.press("Tab");
      reached.add(
        (await owner.evaluate(`(() => {
          const el = document.activeElement;
          if (!el) return "";
          if (el.tagName === "A") return "link:" + el.textContent.trim();
          if (el.tagName === "BUTTON") return "button:" + el.textContent.trim();
          return "field:" + (el.labels && el.labels[0] ? el.labels[0].textContent.trim() : el.getAttribute("aria-label") || el.name);
        })()`)) as string,
      );
    }
    for (const name of NAV) expect(reached).toContain(`link:${name}`);
    expect(reached).toContain("field:URL");
    expect(reached).toContain("field:VIDEO_UPLOADED");
    expect(reached).toContain("button:Create endpoint");
    await owner.context().close();
  }, 90_000);
});
