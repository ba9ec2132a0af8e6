import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../src/log.ts";
import { webrtcAvailability } from "../src/webrtc/availability.ts";
import { hasChromium } from "./support/browser.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { inspectFirstSegment, parsePlaylist } from "./support/media-check.ts";
import { getStream, streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { startWebrtcBrowser, untilPlaying, viewerState, type WebrtcBrowser, whepPlay, whipPublish } from "./support/webrtc-pages.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * Issue 14: a browser publishes by WHIP and another plays by WHEP; the
 * stream lives the RTMP life (LIVE, hls_url, ENDED, a recording that
 * completes). Needs Chromium and the mediasoup worker (`npm run setup:webrtc`).
 */
const ready = hasChromium && webrtcAvailability().available;
if (!ready) console.warn("webrtc-whip skipped: needs /usr/bin/chromium and the mediasoup worker (npm run setup:webrtc)");

let t: TestService;
let b: WebrtcBrowser;

beforeAll(async () => {
  if (!ready) return;
  t = await startTestService({ env: { LIVE_RECONNECT_MS: "500", WEBRTC_PORT: "0" }, ...(process.env.WEBRTC_TEST_DEBUG ? { logger: createLogger({ level: "debug" }) } : {}) });
  b = await startWebrtcBrowser();
});
afterAll(async () => {
  await b?.close();
  await t?.stop({ cleanup: true });
});

async function createStream(body: Record<string, unknown>, path = "/livestreams/") {
  const res = await t.api(path, { method: "POST", json: body });
  expect(res.status).toBe(201);
  return path === "/livestreams/" ? (await ok(res, "createLivestream")).data.stream : (await ok(res, "scheduleLivestream")).data.stream;
}

/** The recording's streams by ffprobe: the FLV beside the live files, or kept as the video's original once transcoded. */
async function recordingStreams(streamId: string, videoId: string): Promise<Array<{ codec_type: string; codec_name: string }>> {
  for (const path of [join(t.dataDir, "originals", videoId, "source.flv"), join(t.dataDir, "recordings", `${streamId}.flv`)]) {
    if (!existsSync(path)) continue;
    const probe = Bun.spawn(["ffprobe", "-v", "error", "-show_streams", "-of", "json", path], { stdout: "pipe", stderr: "pipe" });
    const out = await new Response(probe.stdout).text();
    if ((await probe.exited) === 0) return JSON.parse(out).streams;
  }
  throw new Error(`recording of ${streamId} not found`);
}

describe.skipIf(!ready)("WHIP ingest and WHEP playback in Chromium", () => {
  test("a wrong bearer token is 401 in the envelope; CORS preflight allowed", async () => {
    const s = await createStream({ title: "Refused" });
    expect(s.whip_url).toBe(s.hls_url.replace(/index\.m3u8$/, "whip"));
    expect(s.whep_url).toBe(s.hls_url.replace(/index\.m3u8$/, "whep"));
    expect(s.webrtc_viewers).toBe(0);
    const pre = await fetch(s.whip_url!, { method: "OPTIONS", headers: { origin: "http://example.test", "access-control-request-method": "POST" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-headers")).toContain("authorization");
    expect(pre.headers.get("access-control-expose-headers")).toContain("location");

    const page = await b.page();
    const wrong = await whipPublish(page, s.whip_url!, "not-the-key");
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body)).toMatchObject({ success: false, error: { code: "INVALID_STREAM_KEY" } });
    // Another stream's key is not this stream's.
    const other = await createStream({ title: "Other" });
    expect((await whipPublish(page, s.whip_url!, other.stream_key)).status).toBe(401);
    // Not an SDP.
    const notSdp = await fetch(s.whip_url!, { method: "POST", headers: { authorization: `Bearer ${s.stream_key}`, "content-type": "application/json" }, body: "{}" });
    expect(notSdp.status).toBe(415);
    expect((await getStream(t, s.id)).status).toBe("READY_TO_STREAM");
    await page.close();
  }, 300_000);

  test("WHIP publish → LIVE with HLS, WHEP viewer plays, DELETE ends it, the recording completes", async () => {
    const s = await createStream({ title: "Browser", latency: "LOW" });
    const pub = await b.page();
    const published = await whipPublish(pub, s.whip_url!, s.stream_key);
    expect(published.status).toBe(201);
    expect(published.contentType).toBe("application/sdp");
    expect(published.location).toStartWith(`${s.whip_url}/`);
    expect(published.body).toContain("a=candidate:");

    // A second publisher is refused as RTMP refuses it.
    const second = await whipPublish(await b.page(), s.whip_url!, s.stream_key);
    expect(second.status).toBe(409);
    expect(JSON.parse(second.body).error.code).toBe("STREAM_NOT_ACCEPTING");

    const live = await streamIn(t, s.id, ["LIVE"], 60_000);
    expect(live.started_at).toBeString();
    const text = await (await fetch(s.hls_url)).text();
    expect(parsePlaylist(text).uris.length).toBeGreaterThan(0);
    // CMAF (LL-HLS): a segment decodes after its init segment.
    const seg = await inspectFirstSegment(s.hls_url, text);
    expect(seg.videoCodec).toBe("avc");
    expect(seg.audioCodec).toBe("aac");

    const viewer = await b.page();
    const played = await whepPlay(viewer, s.whep_url!);
    expect(played.status).toBe(201);
    expect(played.location).toStartWith(`${s.whep_url}/`);
    const { later } = await untilPlaying(viewer);
    expect(later.videoWidth).toBe(640);
    expect((await getStream(t, s.id)).webrtc_viewers).toBe(1);
    await waitFor(async () => (await viewerState(viewer)).audioPackets > 0, { timeoutMs: 45_000, what: "audio packets at the viewer" });

    // The publisher's DELETE ends the session: the stream ends as an RTMP publisher leaving does.
    expect((await fetch(published.location!, { method: "DELETE" })).status).toBe(200);
    const ended = await streamIn(t, s.id, ["ENDED"], 60_000);
    expect(ended.recording).toMatchObject({ transcoding: true, width: 640, height: 360 });
    await waitFor(async () => (await outboxEvents(t.service, s.id)).length >= 4, { timeoutMs: 45_000, what: "RECORDING_READY" });
    expect((await outboxEvents(t.service, s.id)).map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
    const video = await waitFor(
      async () => {
        const body = await ok(t.api(`/videos/${ended.recording!.asset_id}/`), "getVideo");
        return ["COMPLETED", "ERROR"].includes(body.data?.video?.status) ? body.data.video : undefined;
      },
      { timeoutMs: 60_000, what: "recording transcode" },
    );
    expect(video).toMatchObject({ status: "COMPLETED", kind: "LIVESTREAM_RECORDING" });
    // The recording kept the browser's H.264 and has its Opus audio as AAC.
    const streams = await recordingStreams(s.id, ended.recording!.asset_id);
    expect(streams.find((x) => x.codec_type === "video")?.codec_name).toBe("h264");
    expect(streams.find((x) => x.codec_type === "audio")?.codec_name).toBe("aac");
    // The viewer's session went with the publisher.
    await waitFor(async () => (await getStream(t, s.id)).webrtc_viewers === 0, { timeoutMs: 45_000, what: "viewer count back to 0" });
    await Promise.all([pub.close(), viewer.close()]);
  }, 300_000);

  test("WHIP to a booked stream and to an ended stream is 409 STREAM_NOT_ACCEPTING (as RTMP refuses them)", async () => {
    const page = await b.page();
    const booked = await createStream({ title: "Booked", scheduled_at: new Date(Date.now() + 30 * 86_400_000).toISOString() }, "/livestreams/schedule/");
    expect(booked.status).toBe("SCHEDULED");
    const early = await whipPublish(page, booked.whip_url!, booked.stream_key);
    expect(early.status).toBe(409);
    expect(JSON.parse(early.body)).toMatchObject({ success: false, error: { code: "STREAM_NOT_ACCEPTING" } });

    const ended = await createStream({ title: "Ended" });
    expect((await t.api(`/livestreams/${ended.id}/end/`, { method: "POST" })).status).toBe(200);
    await streamIn(t, ended.id, ["ENDED"], 10_000);
    const late = await whipPublish(page, ended.whip_url!, ended.stream_key);
    expect(late.status).toBe(409);
    expect(JSON.parse(late.body)).toMatchObject({ success: false, error: { code: "STREAM_NOT_ACCEPTING" } });
    expect(t.service.rtc.publishing(booked.id) || t.service.rtc.publishing(ended.id)).toBe(false);
    await page.close();
  }, 300_000);

  test("POST /end/ on a WHIP-published stream ends the WHIP session too", async () => {
    const s = await createStream({ title: "Ended by the API" });
    const pub = await b.page();
    expect((await whipPublish(pub, s.whip_url!, s.stream_key)).status).toBe(201);
    await streamIn(t, s.id, ["LIVE"], 60_000);
    expect(t.service.rtc.publishing(s.id)).toBe(true);
    expect((await t.api(`/livestreams/${s.id}/end/`, { method: "POST" })).status).toBe(200);
    // The finalizer kicks the RTMP publisher (our relay); its exit closes the WebRTC session.
    await waitFor(async () => !t.service.rtc.publishing(s.id), { timeoutMs: 45_000, what: "WHIP session closed" });
    await pub.close();
  }, 300_000);
});
