/**
 * Issue 16, the watch page in Debian's Chromium: `/watch/<media token>` plays
 * the video with its poster and storyboard previews, loads nothing from
 * another origin, breaks no CSP rule, and plays inside an iframe of a page on
 * another origin; its view is counted (issue 28, trackPlayback); an unknown
 * token or a deleted video is a 404 page.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type Browser, chromium, type Frame, type Page } from "playwright-core";
import { hasPackager } from "../media/transcoder/index.ts";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { completed, register } from "./support/posters.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

/** The DOM as the page callbacks below use it (the tsconfig has no DOM lib): the <video> and the elements the page shows or hides. */
type PageVideo = { poster: string; muted: boolean; currentTime: number; videoWidth: number; play(): Promise<void>; getVideoPlaybackQuality(): { totalVideoFrames: number } };
type PageElement = { hidden: boolean; style: { backgroundImage: string; backgroundPosition: string } };
type PageWindow = { document: { querySelector(selector: string): PageVideo | null; getElementById(id: string): PageElement } };

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

describe.skipIf(!hasChromium)("watch page", () => {
  const files = startFileServer();
  let t: TestService;
  let browser: Browser;
  let video: any;
  /** A page on another origin (another port) that embeds the watch page. */
  let embedder: ReturnType<typeof Bun.serve>;

  beforeAll(async () => {
    t = await startTestService({ env: { MEDIA_BACKEND: "native", ANALYTICS_CLOSE_INTERVAL_MS: "200" } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const id = (await register(t, files.url("av-720p-3s.mp4"), "A <b>watch</b> test")).asset.public_id;
    video = (await completed(t, id)).video;
    embedder = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        new Response(`<!doctype html><title>embedder</title><iframe id="f" src="${video.watch_url}?autoplay=1&muted=1" width="640" height="420" allow="autoplay"></iframe>`, {
          headers: { "content-type": "text/html" },
        }),
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    embedder?.stop(true);
    await t?.stop();
    files.stop();
  });

  /**
   * Runs `use` on a fresh page, then checks what every test here checks: the
   * page requested nothing outside the service's origin (and `allowedOrigins`)
   * and hit no CSP refusal or page error.
   */
  async function onWatchPage(use: (page: Page) => Promise<void>, allowedOrigins: string[] = []) {
    const page: Page = await browser.newPage();
    const outside: string[] = [];
    const refused: string[] = [];
    page.on("request", (r) => {
      const url = r.url();
      if (url.startsWith("data:") || url.startsWith("blob:")) return;
      const origin = new URL(url).origin;
      if (origin !== t.base && !allowedOrigins.includes(origin)) outside.push(url);
    });
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });
    page.on("pageerror", (e) => refused.push(`page error: ${e}`));
    try {
      await use(page);
      expect(outside).toEqual([]);
      expect(refused).toEqual([]);
    } finally {
      await page.close();
    }
  }

  /** Waits until the page's (or frame's) video has played past one second with a decoded picture. */
  const playing = async (page: Page | Frame): Promise<{ currentTime: number; videoWidth: number }> =>
    (
      await page.waitForFunction(
        () => {
          const v = (globalThis as unknown as PageWindow).document.querySelector("video");
          return v && v.currentTime > 1 && v.videoWidth > 0 ? { currentTime: v.currentTime, videoWidth: v.videoWidth } : false;
        },
        undefined,
        { timeout: 30_000 },
      )
    ).jsonValue() as Promise<{ currentTime: number; videoWidth: number }>;

  test("plays with its poster and storyboard previews, and loads nothing from elsewhere", async () => {
    await onWatchPage(async (page) => {
      const thumbnail = page.waitForResponse((r) => r.url() === video.thumbnail_url);
      const res = await page.goto(video.watch_url);
      expect(res!.status()).toBe(200);
      const headers = res!.headers();
      expect(headers["x-frame-options"]).toBeUndefined();
      expect(headers["content-security-policy"]).toContain("frame-ancestors *");
      expect(headers["content-security-policy"]).toContain("script-src 'self'");
      // The title is the video's, escaped.
      expect(await page.title()).toBe("A <b>watch</b> test");
      // The poster: the video's thumbnail, fetched and shown before playback.
      expect(await page.$eval("video", (v) => (v as unknown as PageVideo).poster)).toBe(video.thumbnail_url);
      expect((await thumbnail).status()).toBe(200);

      // Hovering the scrub bar shows the storyboard tile of that moment (the sprite, at the cue's offset).
      await page.waitForFunction(() => !(globalThis as unknown as PageWindow).document.getElementById("scrub").hidden);
      const bar = (await page.$("#scrub"))!;
      const box = (await bar.boundingBox())!;
      const sprite = page.waitForResponse((r) => r.url().endsWith("/sprite.jpg"));
      await page.waitForTimeout(300);
      await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
      await page.waitForFunction(() => !(globalThis as unknown as PageWindow).document.getElementById("preview").hidden, undefined, { timeout: 10_000 });
      const preview = await page.$eval("#preview", (p) => ({ image: (p as unknown as PageElement).style.backgroundImage, position: (p as unknown as PageElement).style.backgroundPosition }));
      expect(preview.image).toContain("/sprite.jpg");
      // 90 % of 3 s falls in the third one-second tile: x = 2 × 160.
      expect(preview.position).toBe("-320px 0px");
      expect((await sprite).status()).toBe(200);

      await page.$eval("video", (v) => {
        const el = v as unknown as PageVideo;
        el.muted = true;
        return el.play();
      });
      expect((await playing(page)).videoWidth).toBeGreaterThan(0);
    });
  }, 60_000);

  test("plays inside an iframe of a page on another origin (?autoplay=1&muted=1)", async () => {
    const embedderOrigin = `http://127.0.0.1:${embedder.port}`;
    await onWatchPage(
      async (page) => {
        await page.goto(`${embedderOrigin}/`);
        const frame = await (await page.$("#f"))!.contentFrame();
        expect(frame).not.toBeNull();
        expect((await playing(frame!)).currentTime).toBeGreaterThan(1);
        expect(await frame!.$eval("video", (v) => (v as unknown as PageVideo).muted)).toBe(true);
      },
      [embedderOrigin],
    );
  }, 60_000);

  test.skipIf(!hasPackager())(
    "a DRM video: poster and a message without a licence token, plays with ?drm_token= (shaka, ClearKey)",
    async () => {
      await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, features: { ...s.features, drm: true } }));
      const res = await t.api("/videos/", { method: "POST", json: { source_url: `${files.url("av-720p-3s.mp4")}?drm=1`, title: "Protected", drm_enabled: true } });
      const drm = (await completed(t, (await ok(res, "createVideo")).data.asset.public_id)).video;
      expect(drm.url).toEndWith(".mpd");
      expect(drm.thumbnail_url).toEndWith("/thumbnail.jpg");
      expect(drm.storyboard_url).toEndWith(".vtt");

      // Issue 23 (8): GET's watch_url carries the answer's licence token, so the link plays as given.
      const bare = drm.watch_url!.split("?")[0];
      expect(new URL(drm.watch_url!).searchParams.get("drm_token")).toBe(new URL(drm.drm_license_url!).searchParams.get("token"));
      await onWatchPage(async (page) => {
        // The page does not mint a licence: without a token it shows the poster and says what to pass.
        await page.goto(bare!);
        expect(await page.$eval("video", (v) => (v as unknown as PageVideo).poster)).toBe(drm.thumbnail_url!);
        await page.waitForFunction(() => !(globalThis as unknown as PageWindow).document.getElementById("message").hidden);
        expect(await page.textContent("#message")).toContain("drm_token");
        // A forged token is no better.
        await page.goto(`${bare}?drm_token=9999999999.${"0".repeat(32)}`);
        await page.waitForFunction(() => !(globalThis as unknown as PageWindow).document.getElementById("message").hidden);

        // watch_url as GET gave it: shaka plays (time advances, frames decoded) and the page says nothing went wrong
        // (it said "player.setTextTrackVisibility is not a function").
        await page.goto(`${drm.watch_url}&autoplay=1&muted=1`);
        expect((await playing(page)).videoWidth).toBeGreaterThan(0);
        expect(await page.$eval("video", (v) => (v as unknown as PageVideo).getVideoPlaybackQuality().totalVideoFrames)).toBeGreaterThan(0);
        expect(await page.$eval("#message", (p) => ({ hidden: (p as unknown as PageElement).hidden, text: p.textContent }))).toEqual({ hidden: true, text: "" });
      });
    },
    120_000,
  );

  test("the view is counted (issue 28): trackPlayback's beacons, viewend when the viewer leaves the page, the API reports it", async () => {
    let viewId = "";
    await onWatchPage(async (page) => {
      await page.goto(`${video.watch_url}?autoplay=1&muted=1`);
      await playing(page);
      viewId = await page.evaluate(() => (globalThis as unknown as { watchTracker: { viewId: string } }).watchTracker.viewId);
      // Leaving fires pagehide (page.close() without runBeforeUnload does not): its viewend goes by sendBeacon.
      await page.goto("about:blank");
    });
    const events = async () =>
      (await t.service.database.client.execute({ sql: "SELECT e.value ->> 0 AS type FROM analytics_event_batches, json_each(events) AS e WHERE view_id = ?", args: [viewId] })).rows.map((r) => r.type);
    await waitFor(async () => (await events()).includes("viewend"), { timeoutMs: 10_000, what: "the watch page's viewend" }).catch(async (err) => {
      throw new Error(`${err}: the view's events were ${JSON.stringify(await events())}`);
    });
    const row = await waitFor(
      async () => {
        const r = await t.service.database.client.execute({ sql: "SELECT watch_ms, startup_ms FROM analytics_views WHERE view_id = ? AND closed_at IS NOT NULL", args: [viewId] });
        return r.rows[0];
      },
      { timeoutMs: 20_000, what: "the watch page's view closed" },
    );
    expect(Number(row.watch_ms)).toBeGreaterThan(500);
    expect(Number(row.startup_ms)).toBeGreaterThan(0);
    const figures = await ok(t.api(`/videos/${video.id}/analytics/?from=${new Date(Date.now() - 3600_000).toISOString()}`), "getVideoAnalytics");
    expect(figures.data.views).toBeGreaterThanOrEqual(1);
    expect(figures.data.watch_time_seconds).toBeGreaterThan(0.5);
  }, 60_000);

  test("an unknown token, a malformed one and a deleted video answer a 404 page", async () => {
    for (const path of [`/watch/${"0".repeat(40)}`, "/watch/not-a-token"]) {
      const res = await fetch(`${t.base}${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toStartWith("text/html");
      expect(await res.text()).toContain("Video not found");
    }
    expect((await fetch(video.watch_url)).status).toBe(200);
    expect((await t.api(`/videos/${video.id}/`, { method: "DELETE" })).status).toBeLessThan(300);
    const gone = await fetch(video.watch_url);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toContain("Video not found");
  });
});
