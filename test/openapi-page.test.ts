/**
 * The docs page (/openapi, Scalar bundled at /openapi/scalar.js) in a real
 * Chromium: it renders the operations, every request it makes stays on the
 * service's origin (no fonts, scripts or telemetry from a CDN), and the
 * buttons that need Scalar's hosted services are not shown.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type Browser, chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const settled = async (page: Page) => {
  await page.waitForLoadState("load", { timeout: 60_000 });
  await page.evaluate("document.fonts.ready.then(() => document.fonts.status)");
};

describe.skipIf(!hasChromium)("the docs page", () => {
  let t: TestService;
  let browser: Browser;
  beforeAll(async () => {
    t = await startTestService();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await t.stop({ cleanup: true });
  });

  test("renders from this origin only and hides hosted-only buttons", async () => {
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    await page.goto(`${t.base}/openapi`);
    await page.getByText("Video library and live streaming API").first().waitFor({ timeout: 60_000 });
    // Not network idle (a page that polls never gets there): the load event, then the fonts the rendered text asked for.
    await settled(page);
    // Open groups too: their parts render (and could load more) only then.
    for (const group of ["Videos", "Webhook events"]) await page.getByText(group, { exact: true }).first().click();
    await page.getByText("Register a video").first().waitFor({ timeout: 60_000 });
    await page.getByText("VIDEO_TRANSCODING_COMPLETED").first().waitFor({ timeout: 60_000 });
    await settled(page);

    const origin = new URL(t.base).origin;
    const foreign = requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith("data:") && !u.startsWith("blob:"));
    expect(foreign).toEqual([]);
    expect(requests).toContain(`${origin}/openapi/scalar.js`);

    for (const hosted of ["Open API Client", "Ask AI", "Developer Tools", "Deploy", "Open in", "Generate MCP", "Configure"]) {
      // Case-sensitive: a plain string matches any case, and "Configure" is inside the API's own TRANSCODE_NOT_CONFIGURED.
      expect(await page.getByText(new RegExp(hosted)).count(), hosted).toBe(0);
    }
    await page.close();
  }, 120_000);
});
