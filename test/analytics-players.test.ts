/**
 * Issue 28 in Debian's Chromium: hls.js and shaka-player play a real video
 * through the SDK's `trackPlayback` (imported by a plain `<script
 * type="module">` from the service's /assets/vidlive-track.js, on a page of
 * another origin), and the analytics API reports what the page itself saw:
 * two normal views from two countries (X-Forwarded-For with TRUST_PROXY=1),
 * then a view stalled by throttling the network through the DevTools
 * protocol, whose stall count, stalled time and rebuffer ratio the API
 * reports within the test's tolerance. Last, a live broadcast (ffmpeg
 * pushing RTMP) watched by two hls.js pages through `trackPlayback` with
 * `streamId`, and a WHEP viewer (when the WebRTC worker is installed): the
 * stream's analytics report them all as concurrent viewers.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type Browser, chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { ok } from "./support/api.ts";
import { startFileServer } from "./support/file-server.ts";
import { completed, register } from "./support/posters.ts";
import { streamIn } from "./support/streams.ts";
import { installWebrtcScript, untilPlaying, whepPlay } from "./support/webrtc-pages.ts";
import { webrtcAvailability } from "../src/webrtc/availability.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(180_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

/** What the page measured itself, from the video element's events (performance.now, milliseconds). */
interface PageLog {
  stalls: number;
  stalledMs: number;
  watchedMs: number;
  viewId: string;
}

/** The test page's globals (this tsconfig has no DOM lib). */
interface PlayerPage {
  ready: boolean;
  log: PageLog;
  start(player: "hls" | "shaka", videoId: string, manifest: string): void;
  finish(): PageLog;
  document: { querySelector(selector: string): { currentTime: number } };
}

/** The live test page's globals. */
interface LivePage {
  startLive(streamId: string, hlsUrl: string): void;
  document: { querySelector(selector: string): { paused: boolean; readyState: number; currentTime: number } };
}

describe.skipIf(!hasChromium)("trackPlayback in Chromium", () => {
  const files = startFileServer();
  let t: TestService;
  let browser: Browser;
  let pages: ReturnType<typeof Bun.serve>;
  let videoId: string;
  let manifest: string;

  beforeAll(async () => {
    t = await startTestService({ env: { MEDIA_BACKEND: "native", TRUST_PROXY: "1", ANALYTICS_CLOSE_INTERVAL_MS: "300", WEBRTC_PORT: "0" } });
    // One small rung: a 10 s, 180p source makes five 2 s segments.
    await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, transcoding: { ladder: [{ name: "360p", height: 360, videoBitrateKbps: 400, audioBitrateKbps: 64 }] } }));
    videoId = (await register(t, files.url("speech-en-10s.mp4"), "analytics")).asset.public_id;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    manifest = (await completed(t, videoId)).video.url!;
    const html = `<!doctype html><title>player</title><video id="v" muted playsinline width="320"></video>
<script src="${t.base}/assets/hls.min.js"></script>
<script src="${t.base}/assets/shaka-player.compiled.js"></script>
<script type="module">
import { trackPlayback } from "${t.base}/assets/vidlive-track.js";
const video = document.getElementById("v");
const log = { stalls: 0, stalledMs: 0, watchedMs: 0, viewId: "" };
let playingSince = null, stalledSince = null, started = false;
const now = () => performance.now();
const stopWatching = () => { if (playingSince !== null) { log.watchedMs += now() - playingSince; playingSince = null; } };
const stopStall = () => { if (stalledSince !== null) { log.stalledMs += now() - stalledSince; stalledSince = null; } };
video.addEventListener("playing", () => { started = true; stopStall(); playingSince = now(); });
video.addEventListener("waiting", () => { stopWatching(); if (started && stalledSince === null) { log.stalls++; stalledSince = now(); } });
for (const e of ["pause", "ended"]) video.addEventListener(e, () => { stopWatching(); stopStall(); });
window.log = log;
window.start = async (kind, videoId, manifest) => {
  if (kind === "hls") {
    const hls = new Hls({ maxBufferLength: 2, maxMaxBufferLength: 2, startLevel: 0 });
    hls.loadSource(manifest);
    hls.attachMedia(video);
    window.tracker = trackPlayback(video, { videoId, hls });
  } else {
    const player = new shaka.Player();
    await player.attach(video);
    window.tracker = trackPlayback(video, { videoId, shaka: player });
    await player.load(manifest);
  }
  log.viewId = window.tracker.viewId;
  await video.play();
};
window.startLive = async (streamId, hlsUrl) => {
  const hls = new Hls({ liveDurationInfinity: true });
  hls.loadSource(hlsUrl);
  hls.attachMedia(video);
  window.tracker = trackPlayback(video, { streamId, hls });
  log.viewId = window.tracker.viewId;
  await video.play();
};
window.finish = () => { stopWatching(); stopStall(); window.tracker.stop(); return log; };
window.ready = true;
</script>`;
    pages = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(html, { headers: { "content-type": "text/html" } }) });
  });
  afterAll(async () => {
    await browser?.close();
    pages?.stop(true);
    await t?.stop();
    files.stop();
  });

  async function openPlayer(forwardedFor: string): Promise<Page> {
    const page = await browser.newPage();
    // The proxy in front (TRUST_PROXY=1) says which address the browser has: added to the beacons as a proxy would
    // (after the browser's CORS checks; extra page headers would make every cross-origin request preflighted).
    await page.route("**/beacons/", (route) => route.continue({ headers: { ...route.request().headers(), "x-forwarded-for": forwardedFor } }));
    await page.goto(`http://127.0.0.1:${pages.port}/`);
    await page.waitForFunction(() => (globalThis as unknown as PlayerPage).ready === true, undefined, { timeout: 60_000 });
    return page;
  }

  /** Ends the view (`viewend`) and waits for its beacon to be answered before the page goes. */
  async function finish(page: Page): Promise<PageLog> {
    const sent = page.waitForResponse((r) => r.url().endsWith("/beacons/") && (r.request().postData() ?? "").includes('"viewend"'), { timeout: 30_000 });
    const log = await page.evaluate(() => (globalThis as unknown as PlayerPage).finish());
    expect((await sent).status()).toBe(204);
    await page.close();
    return log;
  }

  const untilTime = (page: Page, seconds: number) =>
    page.waitForFunction((s) => (globalThis as unknown as PlayerPage).document.querySelector("video").currentTime > s, seconds, { timeout: 90_000, polling: 100 });
  const figures = (views: number) =>
    waitFor(
      async () => {
        const d = (await ok(t.api(`/videos/${videoId}/analytics/?granularity=minute&from=${new Date(Date.now() - 3600_000).toISOString()}`), "getVideoAnalytics")).data;
        return d.views === views ? d : undefined;
      },
      { timeoutMs: 30_000, what: `${views} views` },
    );

  test("hls.js and shaka views from two countries: counted once each, with startup time, watch time and no stall", async () => {
    const [us, gb] = await Promise.all([openPlayer("8.8.8.8"), openPlayer("81.2.69.160")]);
    await Promise.all([
      us.evaluate(([id, m]) => (globalThis as unknown as PlayerPage).start("hls", id!, m!), [videoId, manifest]),
      gb.evaluate(([id, m]) => (globalThis as unknown as PlayerPage).start("shaka", id!, m!), [videoId, manifest]),
    ]);
    await Promise.all([untilTime(us, 3), untilTime(gb, 3)]);
    const logs = await Promise.all([finish(us), finish(gb)]);
    const d = await figures(2);
    expect(d.unique_viewers).toBe(2); // two browser contexts: two random viewer ids
    expect(d.by.country.map((c) => c.value).sort()).toEqual(["GB", "US"]);
    expect(d.by.browser[0]!.value).toMatch(/Chrome/);
    expect(d.startup_time_ms.p50).toBeGreaterThan(0);
    expect(d.startup_time_ms.p95).toBeLessThan(30_000);
    const watched = (logs[0]!.watchedMs + logs[1]!.watchedMs) / 1000;
    expect(Math.abs(d.watch_time_seconds - watched)).toBeLessThan(1.5);
    expect(d.stall_count).toBe(logs[0]!.stalls + logs[1]!.stalls);
    expect(d.by.rendition.length).toBeGreaterThan(0);
  });

  test("a view stalled by Network.emulateNetworkConditions: the API's stall count, stalled time and rebuffer ratio match the page's", async () => {
    const page = await openPlayer("5.9.0.1");
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Network.enable");
    await page.evaluate(([id, m]) => (globalThis as unknown as PlayerPage).start("hls", id!, m!), [videoId, manifest]);
    await untilTime(page, 0.5);
    // 4 KB/s: the next 2 s segment takes far longer than the buffer lasts.
    await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: 4 * 1024, uploadThroughput: -1 });
    await page.waitForFunction(() => (globalThis as unknown as PlayerPage).log.stalls > 0, undefined, { timeout: 60_000, polling: 100 });
    await Bun.sleep(2500);
    await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await untilTime(page, 6);
    const log = await finish(page);
    expect(log.stalls).toBeGreaterThan(0);
    const before = await figures(2);
    const d = await figures(3);
    expect(d.stall_count - before.stall_count).toBe(log.stalls);
    const stalled = d.stalled_seconds - before.stalled_seconds;
    expect(Math.abs(stalled - log.stalledMs / 1000)).toBeLessThan(1);
    const watched = d.watch_time_seconds - before.watch_time_seconds;
    const ratio = stalled / (stalled + watched);
    expect(Math.abs(ratio - log.stalledMs / (log.stalledMs + log.watchedMs))).toBeLessThan(0.08);
    expect(d.rebuffer_ratio).toBeGreaterThan(0);
  });

  test.skipIf(!Bun.which("ffmpeg"))("a live broadcast's two hls.js viewers (and a WHEP viewer) are its concurrent viewers", async () => {
    const stream = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "analytics live" } }), "createLivestream")).data.stream;
    const fixture = new URL("../fixtures/live-360p-6s.flv", import.meta.url).pathname;
    // Looped in real time: live for as long as the test watches.
    const ff = Bun.spawn(["ffmpeg", "-v", "error", "-re", "-stream_loop", "-1", "-i", fixture, "-c", "copy", "-f", "flv", stream.rtmp_url], { stderr: "ignore" });
    try {
      await streamIn(t, stream.id, ["LIVE"], 20_000);
      const viewers = await Promise.all([openPlayer("8.8.4.4"), openPlayer("81.2.69.161")]);
      await Promise.all(viewers.map((p) => p.evaluate(([id, url]) => (globalThis as unknown as LivePage).startLive(id!, url!), [stream.id, stream.hls_url])));
      await Promise.all(
        viewers.map((p) =>
          p.waitForFunction(
            () => {
              const v = (globalThis as unknown as LivePage).document.querySelector("video");
              return !v.paused && v.readyState >= 3 && v.currentTime > 0;
            },
            undefined,
            { timeout: 60_000, polling: 200 },
          ),
        ),
      );
      // WHEP viewers are counted from each process's 10-s samples of its sessions (src/analytics/whep-sampler.ts).
      let expected = viewers.length;
      const whep = webrtcAvailability().available ? await browser.newPage() : null;
      if (whep) {
        await whep.goto(`http://127.0.0.1:${pages.port}/`);
        await installWebrtcScript(whep);
        expect((await whepPlay(whep, stream.whep_url!)).status).toBe(201);
        await untilPlaying(whep);
        expected++;
      } else console.warn("analytics-players: no WHEP viewer (the WebRTC worker is not installed: npm run setup:webrtc)");
      const live = await waitFor(
        async () => {
          const d = (await ok(t.api(`/livestreams/${stream.id}/analytics/?granularity=minute&from=${new Date(Date.now() - 600_000).toISOString()}`), "getLivestreamAnalytics")).data;
          return d.concurrent_viewers.current >= expected ? d : undefined;
        },
        { timeoutMs: 30_000, what: `${expected} concurrent viewers` },
      );
      expect(live.concurrent_viewers.peak).toBeGreaterThanOrEqual(expected);
      await whep?.close();
      await Promise.all(viewers.map((p) => finish(p)));
    } finally {
      ff.kill();
      await ff.exited;
    }
  });
});
