import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags, RawClient } from "../media/rtmp/test-support.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { inspectFirstSegment, parsePlaylist } from "./support/media-check.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { getStream as getStreamOf, streamIn as streamIn_ } from "./support/streams.ts";
import { FULL_STREAM_KEYS, SMALL_STREAM_KEYS } from "../machines/test-contexts.ts";
import { answer, failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

let t: TestService;
const FULL_KEYS = FULL_STREAM_KEYS;
const SMALL_KEYS = SMALL_STREAM_KEYS;

beforeAll(async () => {
  t = await startTestService({ env: { LIVE_RECONNECT_MS: "400", LIVE_SCHEDULE_LEAD_MS: "500" } });
});
afterAll(() => t.stop());

async function createStream(body: Record<string, unknown> = { title: "Live" }, key?: string) {
  const res = await t.api("/livestreams/", { method: "POST", json: body, key });
  return { status: res.status, body: await answer(res, "createLivestream") };
}

const getStream = (id: string) => getStreamOf(t, id);
const streamStatus = (id: string, statuses: string[], timeoutMs?: number) => streamIn_(t, id, statuses, timeoutMs);

describe("a broadcast from start to a playable recording", () => {
  test("ffmpeg-form publish: 404 then live HLS, STARTED from our player, pipeline end, recording transcoded", async () => {
    const created = await createStream({ title: "Launch", latency: "LOW", tags: { team: "a" } });
    expect(created.status).toBe(201);
    const s = created.body.data.stream;
    expect(s.status).toBe("READY_TO_STREAM");
    expect(s.rtmp_url).toMatch(/^rtmp:\/\/.+\/live\/[0-9A-Za-z]+\?sig=[0-9a-f]{32}$/);
    expect((await fetch(s.hls_url)).status).toBe(404);

    const tags = await fixtureTags();
    const pub = publish({ url: s.rtmp_url, form: "ffmpeg", tags, pace: "realtime" });
    await pub.started;
    const playlistText = await waitFor(
      async () => {
        const r = await fetch(s.hls_url);
        const text = r.ok ? await r.text() : "";
        return parsePlaylist(text).uris.length > 0 ? text : undefined;
      },
      { timeoutMs: 10_000, what: "live playlist with a segment" },
    );
    const seg = await inspectFirstSegment(s.hls_url, playlistText);
    expect(seg.videoCodec).toBe("avc");
    expect(seg.width).toBe(640);

    const liveNow = await streamStatus(s.id, ["LIVE"], 10_000);
    expect(liveNow.started_at).toBeString();
    await pub.finished;
    const ended = await streamStatus(s.id, ["ENDED"], 15_000);
    const final = parsePlaylist(await (await fetch(s.hls_url)).text());
    expect(final.ended).toBe(true);
    expect(ended.recording).toMatchObject({ transcoding: true, resolution: "640x360", width: 640, height: 360 });
    expect(ended.recording!.duration_seconds).toBeGreaterThanOrEqual(5);

    const events = await outboxEvents(t.service, s.id);
    expect(events.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
    expect(Object.keys(events[0]!.data.stream).sort()).toEqual(FULL_KEYS);
    expect(events[1]!.data.stream).toMatchObject({ status: "LIVE", started_at: expect.any(String) });
    for (const e of events.slice(2)) {
      expect(Object.keys(e.data.stream).sort()).toEqual(SMALL_KEYS);
      expect(e.data.stream).toMatchObject({ status: "ENDED", latency: "LOW", drm: false });
      expect(e.data.recording.asset_id).toBe(ended.recording!.asset_id);
    }

    const assetId = ended.recording!.asset_id;
    const video = await waitFor(
      async () => {
        const b = await ok(t.api(`/videos/${assetId}/`), "getVideo");
        return ["COMPLETED", "ERROR"].includes(b.data?.video?.status) ? b.data : undefined;
      },
      { timeoutMs: 120_000, what: "recording transcode" },
    );
    expect(video.video).toMatchObject({ status: "COMPLETED", kind: "LIVESTREAM_RECORDING" });
    expect(video.stream).toEqual({ id: s.id, stream_key: s.stream_key });
    expect(video.video.url).toBeString();
    const videoEvents = await outboxEvents(t.service, assetId);
    expect(videoEvents.map((e) => e.event)).toEqual(["VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
    expect(videoEvents[1]!.data.video.kind).toBe("LIVESTREAM_RECORDING");
    const after = await waitFor(async () => (await getStream(s.id))?.playback_url ?? undefined, { what: "playback_url" });
    expect(after).toBe(video.video.url!);
  }, 180_000);

  test("OBS form with an explicit end: LIVESTREAM_ENDED has the full shape, RECORDING_READY follows", async () => {
    const s = (await createStream({ title: "OBS" })).body.data.stream;
    const tags = await fixtureTags();
    const pub = publish({ url: s.rtmp_url, form: "obs", tags, pace: "realtime" });
    await pub.started;
    await streamStatus(s.id, ["LIVE"], 10_000);
    const end = await t.api(`/livestreams/${s.id}/end/`, { method: "POST" });
    expect(end.status).toBe(200);
    expect((await ok(end, "endLivestream")).data.stream.status).toBe("ENDED");
    await expect(pub.finished).rejects.toThrow();
    await waitFor(async () => (await outboxEvents(t.service, s.id)).length >= 4, { timeoutMs: 15_000, what: "RECORDING_READY" });
    const events = await outboxEvents(t.service, s.id);
    expect(events.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
    expect(Object.keys(events[2]!.data.stream).sort()).toEqual(FULL_KEYS);
    expect(events[2]!.data.stream.status).toBe("ENDED");
    expect(events[3]!.data.recording.asset_id).toMatch(/^vid_/);
    // Ending again changes nothing.
    expect((await t.api(`/livestreams/${s.id}/end/`, { method: "POST" })).status).toBe(200);
    expect((await outboxEvents(t.service, s.id)).length).toBe(4);
  }, 60_000);
});

describe("refusals and failures", () => {
  test("bad signature, unknown key, a second publisher and an ended stream are refused before media", async () => {
    const s = (await createStream({ title: "Guarded" })).body.data.stream;
    const tags = await fixtureTags();
    const bad = publish({ url: s.rtmp_url.replace(/sig=[0-9a-f]+/, "sig=" + "0".repeat(32)), tags });
    await expect(bad.started).rejects.toThrow();
    const unknown = publish({ url: s.rtmp_url.replace(/live\/[0-9A-Za-z]+/, "live/nope"), tags });
    await expect(unknown.started).rejects.toThrow();

    const first = publish({ url: s.rtmp_url, tags: tags.slice(0, 40), pace: "fast", unpublishAtEnd: false });
    await first.started;
    const second = publish({ url: s.rtmp_url, tags });
    await expect(second.started).rejects.toThrow();
    await t.api(`/livestreams/${s.id}/end/`, { method: "POST" });
    await first.finished.catch(() => undefined);
    const late = publish({ url: s.rtmp_url, tags });
    await expect(late.started).rejects.toThrow();
    expect((await getStream(s.id)).status).toBe("ENDED");
  }, 120_000);

  test("a killed publisher ends the stream after the reconnect window and keeps the recording", async () => {
    const s = (await createStream({ title: "Killed" })).body.data.stream;
    const tags = await fixtureTags();
    const pub = publish({ url: s.rtmp_url, tags, pace: "realtime" });
    await pub.started;
    await streamStatus(s.id, ["LIVE"], 10_000);
    pub.abort();
    const ended = await streamStatus(s.id, ["ENDED"], 10_000);
    expect(ended.recording!.asset_id).toMatch(/^vid_/);
    const events = (await outboxEvents(t.service, s.id)).map((e) => e.event);
    expect(events).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
  }, 120_000);

  test("garbage on the RTMP port closes that connection only", async () => {
    const port = t.service.live.rtmp!.port;
    const raw = await RawClient.connect(port);
    raw.send(crypto.getRandomValues(new Uint8Array(5000)));
    await Promise.race([raw.closed, Bun.sleep(5000)]);
    expect(raw.isClosed).toBe(true);
    const s = (await createStream({ title: "After garbage" })).body.data.stream;
    const pub = publish({ url: s.rtmp_url, tags: (await fixtureTags()).slice(0, 30) });
    await pub.started;
    await pub.finished;
  }, 120_000);

  test("drm_enabled is refused with DRM_NOT_AVAILABLE; validation names the field", async () => {
    const drm = await createStream({ title: "x", drm_enabled: true });
    expect(drm.status).toBe(409);
    expect(drm.body.error.code).toBe("DRM_NOT_AVAILABLE");
    const bad = await createStream({ title: "x", latency: "ULTRA" });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.details)).toEqual(["latency"]);
  });
});

describe("scheduling and slots", () => {
  test("a booked stream is SCHEDULED, then becomes READY_TO_STREAM shortly before its time", async () => {
    const at = new Date(Date.now() + 1500).toISOString();
    const res = await t.api("/livestreams/schedule/", { method: "POST", json: { title: "Later", scheduled_at: at } });
    expect(res.status).toBe(201);
    const s = (await ok(res, "scheduleLivestream")).data.stream;
    expect(s.status).toBe("SCHEDULED");
    expect(s.scheduled_at).toBe(at);
    const early = publish({ url: s.rtmp_url, tags: await fixtureTags() });
    await expect(early.started).rejects.toThrow();
    await streamStatus(s.id, ["READY_TO_STREAM"], 5_000);
    const events = await outboxEvents(t.service, s.id);
    expect(events.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED"]);
    expect(events[0]!.data.stream.status).toBe("SCHEDULED");
    const past = await t.api("/livestreams/schedule/", { method: "POST", json: { title: "Past", scheduled_at: "2020-01-01T00:00:00Z" } });
    expect(past.status).toBe(422);
  });

  test("the slot pool: none left gives 503 and creates nothing; ending frees the slot", async () => {
    const small = await startTestService({ env: { LIVE_SLOTS: "1" } });
    try {
      const first = await small.api("/livestreams/", { method: "POST", json: { title: "one" } });
      expect(first.status).toBe(201);
      const id = (await ok(first, "createLivestream")).data.stream.id;
      const second = await small.api("/livestreams/", { method: "POST", json: { title: "two" } });
      expect(second.status).toBe(503);
      expect((await failed(second)).error.code).toBe("NO_SLOTS_AVAILABLE");
      const list = (await ok(small.api("/livestreams/"), "listLivestreams")).data.items;
      expect(list).toHaveLength(1);
      await small.api(`/livestreams/${id}/end/`, { method: "POST" });
      expect((await small.api("/livestreams/", { method: "POST", json: { title: "three" } })).status).toBe(201);
    } finally {
      await small.stop();
    }
  });
});

test("a restart during a broadcast ends it cleanly after the restart, with its recording, events once", async () => {
  // Issue 26: the stop cuts the encoder and surrenders the broadcast, whose reconnect window (the stream's machine timer,
  // armed here) then runs: an encoder coming back to any process would continue it; nobody does, so the restarted process ends it.
  const svc = await startTestService({ env: { LIVE_RECONNECT_MS: "3000" } });
  let restarted: TestService | undefined;
  try {
    const s = (await ok(svc.api("/livestreams/", { method: "POST", json: { title: "Crash" } }), "createLivestream")).data.stream;
    const pub = publish({ url: s.rtmp_url, tags: await fixtureTags(), pace: "realtime" });
    await pub.started;
    await waitFor(async () => (await ok(svc.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream.status === "LIVE", { timeoutMs: 10_000 });
    await svc.stop({ cleanup: false });
    await pub.finished.catch(() => undefined);
    restarted = await startTestService({ dataDir: svc.dataDir, org: { orgId: svc.orgId, apiKey: svc.apiKey } });
    // The restarted process finalizes the cut broadcast as work; a client sees it end.
    const back = restarted;
    const after = await waitFor(
      async () => {
        const stream = (await ok(back.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream;
        return stream.status === "ENDED" ? stream : undefined;
      },
      { timeoutMs: 15_000, what: "the cut broadcast ENDED after the restart" },
    );
    expect(after.recording!.asset_id).toMatch(/^vid_/);
    const events = (await outboxEvents(restarted.service, s.id)).map((e) => e.event);
    expect(events).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
  } finally {
    await (restarted ?? svc).stop();
  }
}, 60_000);

test("the idle rule: a ready stream nobody publishes to ends with no recording and frees its slot", async () => {
  const svc = await startTestService({ env: { LIVE_IDLE_TIMEOUT_MS: "1500", LIVE_SLOTS: "1" } });
  try {
    const s = (await ok(svc.api("/livestreams/", { method: "POST", json: { title: "Nobody came" } }), "createLivestream")).data.stream;
    expect((await svc.api("/livestreams/", { method: "POST", json: { title: "No slot" } })).status).toBe(503);
    const ended = await waitFor(
      async () => {
        const st = (await ok(svc.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream;
        return st.status === "ENDED" ? st : undefined;
      },
      { timeoutMs: 10_000, what: "idle end" },
    );
    expect(ended.recording).toBeNull();
    const events = await outboxEvents(svc.service, s.id);
    expect(events.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_ENDED"]);
    expect(events[1]!.data.recording).toBeNull();
    expect((await svc.api("/livestreams/", { method: "POST", json: { title: "Now there is" } })).status).toBe(201);
  } finally {
    await svc.stop();
  }
}, 120_000);

test.skipIf(!Bun.which("ffmpeg"))(
  "native ffmpeg -re pushing to rtmp_url goes LIVE and ends with a recording",
  async () => {
    const s = (await createStream({ title: "ffmpeg" })).body.data.stream;
    const fixture = new URL("../fixtures/live-360p-6s.flv", import.meta.url).pathname;
    const ff = Bun.spawn(["ffmpeg", "-v", "error", "-re", "-i", fixture, "-c", "copy", "-f", "flv", s.rtmp_url], { stderr: "pipe" });
    await streamStatus(s.id, ["LIVE"], 15_000);
    expect(await ff.exited).toBe(0);
    const ended = await streamStatus(s.id, ["ENDED"], 15_000);
    expect(ended.recording).toMatchObject({ resolution: "640x360", transcoding: true });
  },
  120_000,
);
