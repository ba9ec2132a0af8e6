import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { withOffset } from "../src/settings/live-pages.ts";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { settingsScreen } from "./support/settings-browser.ts";
import { waitFor } from "./support/events.ts";
import { getStream } from "./support/streams.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const FIXTURE = new URL("../fixtures/live-360p-6s.flv", import.meta.url).pathname;
const hasFfmpeg = !!Bun.which("ffmpeg");

test("a datetime-local start time gets the browser's offset (getTimezoneOffset minutes), UTC without it", () => {
  expect(withOffset("2030-01-31T18:00", "-120")).toBe("2030-01-31T18:00:00+02:00");
  expect(withOffset("2030-01-31T18:00", "330")).toBe("2030-01-31T18:00:00-05:30");
  expect(withOffset("2030-01-31T18:00:30", undefined)).toBe("2030-01-31T18:00:30Z");
  expect(withOffset("tomorrow", "0")).toBe("tomorrow");
});

describe.skipIf(!hasChromium || !hasFfmpeg)("settings screen: live streams (issue 13 point 6)", () => {
  const screen = settingsScreen({ env: { LIVE_RECONNECT_MS: "400", LIVE_SCHEDULE_LEAD_MS: "500" } });

  test("book a stream; create one, push ffmpeg to the rtmp_url shown, the preview plays, end it, the recording link opens its video", async () => {
    const page = await screen.signInAs("developer");
    await page.getByRole("link", { name: "Live streams", exact: true }).click();
    expect(await page.getByText("No live streams yet").isVisible()).toBe(true);

    // Booking: a start time in the past is the API's refusal, shown; a future one books (SCHEDULED).
    await page.getByLabel("Title", { exact: true }).fill("Booked");
    await page.getByLabel(/^Start time/).fill("2020-01-01T10:00");
    await page.getByRole("button", { name: "Create stream" }).click();
    expect(await page.getByRole("alert").innerText()).toContain("scheduled_at");
    const later = new Date(Date.now() + 30 * 86_400_000);
    await page.getByLabel(/^Start time/).fill(later.toISOString().slice(0, 16));
    await page.getByRole("button", { name: "Create stream" }).click();
    await page.waitForURL((u) => /^\/settings\/live\/[^/]+$/.test(u.pathname));
    expect(await page.locator("#stream").getAttribute("data-status")).toBe("SCHEDULED");
    const booked = await getStream(screen.t, page.url().split("/").pop()!);
    // Within a day of it whatever the browser's time zone (the page sends its offset).
    expect(Math.abs(Date.parse(booked.scheduled_at!) - later.getTime())).toBeLessThan(86_400_000);

    await page.getByRole("link", { name: "Live streams", exact: true }).click();
    await page.getByLabel("Title", { exact: true }).fill("Launch");
    await page.getByLabel("Latency").selectOption("LOW");
    await page.getByRole("button", { name: "Create stream" }).click();
    await page.waitForURL((u) => /^\/settings\/live\/[^/]+$/.test(u.pathname));
    const id = page.url().split("/").pop()!;
    expect(await page.locator("#stream").getAttribute("data-status")).toBe("READY_TO_STREAM");
    const rtmpUrl = await page.getByLabel("RTMP URL", { exact: true }).inputValue();
    expect(rtmpUrl).toBe((await getStream(screen.t, id)).rtmp_url);
    expect(await page.getByRole("button", { name: "Copy RTMP URL" }).isVisible()).toBe(true);
    expect(await page.getByText("Stream Key: leave it blank.", { exact: true }).isVisible()).toBe(true);

    // The URL as shown, pushed by ffmpeg (looped until the stream is ended from the page).
    const ff = Bun.spawn(["ffmpeg", "-v", "error", "-re", "-stream_loop", "-1", "-i", FIXTURE, "-c", "copy", "-f", "flv", rtmpUrl], { stderr: "pipe" });
    try {
      // The page notices LIVE by itself and attaches hls.js to hls_url.
      await page.waitForFunction(
        `(() => {
          const v = document.getElementById("preview-player");
          if (v && v.paused && v.readyState >= 2) v.play().catch(() => {});
          return document.getElementById("stream").getAttribute("data-status") === "LIVE" && !!v && v.currentTime > 0.5 && v.videoWidth > 0;
        })()`,
        null,
        { timeout: 45_000, polling: 250 },
      );
      // The preview is a viewer of the stream (issue 28: trackPlayback with its id).
      await waitFor(
        async () => {
          const d = (await ok(screen.t.api(`/livestreams/${id}/analytics/`), "getLivestreamAnalytics")).data;
          return d.concurrent_viewers.current >= 1 ? d : undefined;
        },
        { timeoutMs: 20_000, what: "the preview counted as a viewer" },
      );

      page.once("dialog", (d) => d.accept());
      await page.getByRole("button", { name: "End stream" }).click();
      await page.waitForURL((u) => u.searchParams.get("done") === "ended");
      expect(["ENDED"]).toContain((await page.locator("#stream").getAttribute("data-status"))!);
      await page.locator("#recording-link").waitFor({ timeout: 30_000 });
    } finally {
      ff.kill();
      await ff.exited;
    }
    const stream = await getStream(screen.t, id);
    expect(stream.status).toBe("ENDED");
    await page.locator("#recording-link").click();
    expect(new URL(page.url()).pathname).toBe(`/settings/videos/${stream.recording!.asset_id}`);
    expect(await page.locator("main h1").innerText()).toBe("Launch");
    await page.context().close();
  }, 90_000);

  test("another organization's stream is a 404 page, as a missing one; a viewer cannot create", async () => {
    const other = await screen.t.service.orgs.createOrg("other");
    const foreign = await ok(screen.t.api("/livestreams/", { method: "POST", json: { title: "Theirs" }, key: other.apiKey }), "createLivestream");
    const viewer = await screen.signInAs("viewer");
    expect((await viewer.goto(`${screen.t.base}/settings/live/${foreign.data.stream.id}`))!.status()).toBe(404);
    expect((await viewer.goto(`${screen.t.base}/settings/live/liv_missing`))!.status()).toBe(404);
    await viewer.goto(`${screen.t.base}/settings/live`);
    expect(await viewer.getByRole("button", { name: "Create stream" }).count()).toBe(0);
    await viewer.context().close();
  }, 120_000);
});

describe.skipIf(!hasChromium)("settings screen: who sees a stream's push credentials (issue 23 item 4)", () => {
  const screen = settingsScreen();

  test("a viewer's stream page has no rtmp_url, stream key or its signature; developer and admin see them", async () => {
    const created = await screen.t.api("/livestreams/", { method: "POST", json: { title: "Keys" } });
    const stream = (await ok(created, "createLivestream")).data.stream;
    const signature = new URL(stream.rtmp_url.replace(/^rtmp:/, "http:")).searchParams.get("sig")!;
    expect(stream.stream_key.length).toBeGreaterThan(8);

    const viewer = await screen.signInAs("viewer");
    const answer = await viewer.goto(`${screen.t.base}/settings/live/${stream.id}`);
    expect(answer!.status()).toBe(200);
    const html = await viewer.content();
    expect(html).toContain(stream.id);
    for (const secret of [stream.rtmp_url, stream.stream_key, signature]) expect(html).not.toContain(secret);
    expect(await viewer.getByLabel("RTMP URL", { exact: true }).count()).toBe(0);
    expect(await viewer.getByText("shown to roles that manage live streams").isVisible()).toBe(true);
    // Nor through the list or the status JSON the page polls.
    await viewer.goto(`${screen.t.base}/settings/live`);
    expect(await viewer.content()).not.toContain(stream.stream_key);
    const status = await viewer.request.get(`${screen.t.base}/settings/live/${stream.id}/status.json`);
    expect(await status.text()).not.toContain(stream.stream_key);
    await viewer.context().close();

    for (const role of ["developer", "admin"] as const) {
      const page = await screen.signInAs(role);
      await page.goto(`${screen.t.base}/settings/live/${stream.id}`);
      expect(await page.getByLabel("RTMP URL", { exact: true }).inputValue()).toBe(stream.rtmp_url);
      await page.context().close();
    }
  }, 120_000);
});
