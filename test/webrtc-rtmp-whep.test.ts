import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createLogger } from "../src/log.ts";
import { webrtcAvailability } from "../src/webrtc/availability.ts";
import { hasChromium } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { getStream, streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { startWebrtcBrowser, untilPlaying, viewerState, type WebrtcBrowser, whepPlay, ffmpegTestPublish } from "./support/webrtc-pages.ts";
import { failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * Issue 14: an RTMP publish (real ffmpeg) played by WHEP in Chromium, audio
 * (AAC → Opus) and video (H.264 as is); the per-stream viewer limit.
 */
const ready = hasChromium && webrtcAvailability().available && !!Bun.which("ffmpeg");
if (!ready) console.warn("webrtc-rtmp-whep skipped: needs /usr/bin/chromium, ffmpeg and the mediasoup worker (npm run setup:webrtc)");

let t: TestService;
let b: WebrtcBrowser;

beforeAll(async () => {
  if (!ready) return;
  t = await startTestService({
    env: { LIVE_RECONNECT_MS: "500", WEBRTC_PORT: "0", WEBRTC_MAX_VIEWERS_PER_STREAM: "1" },
    ...(process.env.WEBRTC_TEST_DEBUG ? { logger: createLogger({ level: "debug" }) } : {}),
  });
  b = await startWebrtcBrowser();
});
afterAll(async () => {
  await b?.close();
  await t?.stop({ cleanup: true });
});

describe.skipIf(!ready)("RTMP publish played by WHEP", () => {
  test("ffmpeg → rtmp_url, Chromium plays whep_url with audio and video; a second viewer is over the limit", async () => {
    const res = await t.api("/livestreams/", { method: "POST", json: { title: "RTMP to WebRTC" } });
    const s = (await ok(res, "createLivestream")).data.stream;
    // Not on air yet: nothing to play.
    const early = await fetch(s.whep_url!, { method: "POST", headers: { "content-type": "application/sdp" }, body: "v=0\r\n" });
    expect(early.status).toBe(409);
    expect((await failed(early, "createWhepSession")).error.code).toBe("STREAM_NOT_LIVE");

    const ff = ffmpegTestPublish(s.rtmp_url, { seconds: 25, size: "640x360", fps: 30, audioKbps: 96 });
    try {
      await streamIn(t, s.id, ["LIVE"], 60_000);
      const viewer = await b.page();
      const played = await whepPlay(viewer, s.whep_url!);
      expect(played.status).toBe(201);
      const { later } = await untilPlaying(viewer);
      expect(later.videoWidth).toBe(640);
      expect(later.tracks.sort()).toEqual(["audio", "video"]);
      // Decoded, not only received: the Opus decoder produced samples (inbound-rtp audio totalSamplesReceived).
      const audio = await waitFor(
        async () => {
          const st = await viewerState(viewer);
          return st.audioPackets > 20 && st.audioSamples > 0 ? st : undefined;
        },
        { timeoutMs: 45_000, what: "Opus decoded at the viewer" },
      );
      expect(audio.audioSamples).toBeGreaterThan(0);
      expect(audio.framesDecoded).toBeGreaterThan(0);
      expect((await getStream(t, s.id)).webrtc_viewers).toBe(1);
      expect(await (await fetch(`${t.base}/metrics`)).text()).toContain("vidlive_webrtc_viewers 1");

      // WEBRTC_MAX_VIEWERS_PER_STREAM=1: the next viewer is refused in the envelope, until the first leaves.
      const second = await b.page();
      const refused = await whepPlay(second, s.whep_url!);
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body)).toMatchObject({ success: false, error: { code: "VIEWER_LIMIT_REACHED" } });
      expect((await fetch(played.location!, { method: "DELETE" })).status).toBe(200);
      expect((await getStream(t, s.id)).webrtc_viewers).toBe(0);
      const again = await whepPlay(second, s.whep_url!);
      expect(again.status).toBe(201);
      await untilPlaying(second);
      await Promise.all([viewer.close(), second.close()]);
    } finally {
      ff.kill();
      await ff.exited;
    }
  }, 60_000);
});
