/**
 * Issue 13 audit, what the pages show once things happened: the webhook
 * delivery log's time, status, duration and error columns (a failing
 * receiver, an unreachable one), and a COMPLETED video's renditions,
 * downloads (each link fetched) and, with pocketsphinx, transcript and summary.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { findPocketsphinx } from "../media/stt/pocketsphinx.ts";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { settingsScreen } from "./support/settings-browser.ts";
import { startWebhookReceiver, TEST_CA_FILE, type WebhookReceiver } from "./support/webhook-receiver.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);
const SPEECH = new URL("../fixtures/speech-en-10s.mp4", import.meta.url).pathname;
const pocketsphinx = findPocketsphinx() !== null;

describe.skipIf(!hasChromium)("settings: delivery log columns, a completed video's media", () => {
  const screen = settingsScreen({ env: { WEBHOOK_CA_FILE: TEST_CA_FILE } });
  let failing: WebhookReceiver;

  beforeAll(() => {
    failing = startWebhookReceiver(() => new Response("broken", { status: 500 }));
  });
  afterAll(() => failing?.stop());

  /** The log's attempt rows of the only delivery, as the page shows them. */
  const attemptCells = async (page: import("playwright-core").Page) =>
    (await page.evaluate(`Array.from(document.querySelectorAll("li.delivery tr.attempt")).map((r) => {
      const td = Array.from(r.querySelectorAll("td"));
      const time = td[0] && td[0].querySelector("time");
      return { datetime: time ? time.getAttribute("datetime") : "", time: time ? time.textContent.trim() : "", status: td[1].textContent.trim(), duration: td[2].textContent.trim(), error: td[3].textContent.trim() };
    })`)) as Array<{ datetime: string; time: string; status: string; duration: string; error: string }>;

  async function endpointPage(url: string) {
    const page = await screen.signInAs("developer");
    await page.goto(`${screen.t.base}/settings/webhooks`);
    await page.getByLabel("URL", { exact: true }).fill(url);
    await page.getByLabel("VIDEO_UPLOADED").check();
    await page.getByRole("button", { name: "Create endpoint" }).click();
    await page.getByRole("link", { name: `Open ${url}` }).click();
    await page.getByLabel("Event").selectOption("VIDEO_UPLOADED");
    await page.getByRole("button", { name: "Send test event" }).click();
    await page.waitForSelector("li.delivery tr.attempt");
    return page;
  }

  test("a receiver answering 500: the attempt's time (UTC), status 500, duration in ms and the error text", async () => {
    const before = Date.now();
    const page = await endpointPage(failing.url);
    expect(failing.received.length).toBe(1);
    const [row, ...more] = await attemptCells(page);
    expect(more).toEqual([]);
    expect(row!.status).toBe("500");
    expect(row!.error).toBe("HTTP 500");
    expect(row!.duration).toMatch(/^\d+ ms$/);
    // The time column names the attempt's moment: an ISO instant shown as "YYYY-MM-DD HH:MM:SS UTC".
    expect(row!.time).toBe(`${row!.datetime.slice(0, 19).replace("T", " ")} UTC`);
    const at = Date.parse(row!.datetime);
    expect(at).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(at).toBeLessThanOrEqual(Date.now());
    expect(await page.locator("li.delivery").innerText()).not.toContain("DELIVERED");
    await page.context().close();
  }, 60_000);

  test("an unreachable receiver: status 'no answer' and the network error", async () => {
    const closed = startWebhookReceiver();
    const url = closed.url;
    closed.stop();
    const page = await endpointPage(url);
    const [row] = await attemptCells(page);
    expect(row!.status).toBe("no answer");
    expect(row!.error).toStartWith("Network error");
    expect(row!.duration).toMatch(/^\d+ ms$/);
    await page.context().close();
  }, 60_000);

  test(`a COMPLETED video's page: renditions, download links that fetch 200${pocketsphinx ? ", transcript and summary" : ""}`, async () => {
    const upload = await ok(screen.t.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl");
    expect((await fetch(upload.data.upload_url, { method: "PUT", body: Bun.file(SPEECH) })).ok).toBe(true);
    const created = await ok(screen.t.api("/videos/", { method: "POST", json: { source_url: upload.data.source_url, title: "Speech", subtitles: pocketsphinx } }), "createVideo");
    const id = created.data.video.id as string;
    let data: any;
    for (let i = 0; i < 480; i++) {
      data = (await ok(screen.t.api(`/videos/${id}/`), "getVideo")).data;
      if (data.video.status !== "TRANSCODING") break;
      await Bun.sleep(250);
    }
    expect(data.video.status).toBe("COMPLETED");

    const page = await screen.signInAs("viewer");
    await page.goto(`${screen.t.base}/settings/videos/${id}`);
    expect(await page.getByRole("heading", { name: "Renditions and downloads" }).isVisible()).toBe(true);
    const hrefs = async (name: RegExp) => Promise.all((await page.getByRole("link", { name }).all()).map(async (a) => new URL((await a.getAttribute("href"))!, screen.t.base).href));
    const playlists = await hrefs(/ playlist$/);
    expect(playlists.length).toBe(data.renditions.length);
    expect(playlists.length).toBeGreaterThan(0);
    for (const href of playlists) {
      const res = await fetch(href);
      expect(res.status).toBe(200);
      expect(await res.text()).toStartWith("#EXTM3U");
    }
    const downloads = await hrefs(/^Download /);
    // The default downloads setting offers the top rendition.
    expect(downloads.length).toBeGreaterThan(0);
    for (const href of downloads) {
      const res = await fetch(href);
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }

    if (pocketsphinx) {
      expect(await page.getByRole("heading", { name: "Transcript" }).isVisible()).toBe(true);
      // The page fetches both texts from their media URLs and shows them.
      await page.waitForFunction(`document.getElementById("summary-text").textContent !== "Loading…" && document.getElementById("transcript-text").textContent !== "Loading…"`);
      expect(await page.locator("#transcript-text").textContent()).toStartWith("WEBVTT");
      expect((await page.locator("#summary-text").textContent())!.trim().length).toBeGreaterThan(0);
      for (const name of ["transcript.vtt", "summary.txt"]) {
        const href = await page.getByRole("link", { name, exact: true }).getAttribute("href");
        expect((await fetch(new URL(href!, screen.t.base))).status).toBe(200);
      }
    }
    await page.context().close();
  }, 180_000);
});
