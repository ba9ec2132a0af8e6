import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { ok } from "./support/api.ts";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { settingsScreen } from "./support/settings-browser.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

describe.skipIf(!hasChromium)("settings screen: a stream's simulcast targets (issue 26)", () => {
  const screen = settingsScreen({});

  test("a developer adds a target (key hidden), sees its status, a refusal in the form, and removes it; a viewer sees the list only", async () => {
    const page = await screen.signInAs("developer");
    await page.goto(`${screen.t.base}/settings/live`);
    await page.getByLabel("Title", { exact: true }).fill("Simulcast from the screen");
    await page.getByRole("button", { name: "Create stream" }).click();
    await page.waitForURL((u) => /^\/settings\/live\/[^/]+$/.test(u.pathname));
    const id = page.url().split("/").pop()!;
    expect(await page.locator("#no-outputs").isVisible()).toBe(true);

    // A refusal comes back in the form, naming the field, as the API's 422.
    await page.getByLabel("Target URL").fill("http://example.com/app");
    await page.getByRole("button", { name: "Add target" }).click();
    expect(await page.getByRole("alert").textContent()).toContain("url");

    await page.getByLabel("Target URL").fill("rtmp://127.0.0.1:9/app");
    await page.getByLabel("Stream key").fill("screenkey123456");
    await page.getByLabel("Name (optional)").fill("Platform B");
    await page.getByRole("button", { name: "Add target" }).click();
    await page.waitForURL((u) => u.search.includes("done=output-added"));
    const row = page.locator("#outputs tbody tr");
    expect(await row.count()).toBe(1);
    expect(await row.textContent()).toContain("rtmp://127.0.0.1:9/app/***");
    expect(await row.locator(".badge").textContent()).toBe("IDLE");
    expect(await page.content()).not.toContain("screenkey123456");
    const [output] = (await ok(screen.t.api(`/livestreams/${id}/outputs/`), "listLivestreamOutputs")).data.outputs;
    expect(output).toMatchObject({ name: "Platform B", url: "rtmp://127.0.0.1:9/app/***", status: "idle" });
    await page.context().close();

    const viewer = await screen.signInAs("viewer");
    await viewer.goto(`${screen.t.base}/settings/live/${id}`);
    expect(await viewer.locator("#outputs tbody tr").count()).toBe(1);
    expect(await viewer.getByRole("button", { name: /Remove/ }).count()).toBe(0);
    expect(await viewer.locator("#output-form").count()).toBe(0);
    await viewer.context().close();

    const again = await screen.signInAs("developer");
    await again.goto(`${screen.t.base}/settings/live/${id}`);
    again.once("dialog", (d) => d.accept());
    await again.getByRole("button", { name: "Remove Platform B" }).click();
    await again.waitForURL((u) => u.search.includes("done=output-removed"));
    expect(await again.locator("#no-outputs").isVisible()).toBe(true);
    expect((await ok(screen.t.api(`/livestreams/${id}/outputs/`), "listLivestreamOutputs")).data.outputs).toEqual([]);
    await again.context().close();
  });
});
