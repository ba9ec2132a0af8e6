import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ffprobeJson, closeMediaTools } from "../media/test-support/media-tools.ts";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import type { MediaMessage } from "../media/rtmp/publish-handlers.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { startFileServer } from "./support/file-server.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { parsePlaylist } from "./support/media-check.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { getStream as getStreamOf, streamIn as streamIn_ } from "./support/streams.ts";
import { FULL_STREAM_KEYS, SMALL_STREAM_KEYS } from "../machines/test-contexts.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

let t: TestService;
const files = startFileServer();
const FULL_KEYS = FULL_STREAM_KEYS;
const SMALL_KEYS = SMALL_STREAM_KEYS;
const RECONNECT_MS = 10_000; // long enough that a reconnect on a loaded machine lands inside it
const SEGMENT_S = 2; // NORMAL latency

beforeAll(async () => {
  t = await startTestService({ env: { LIVE_RECONNECT_MS: String(RECONNECT_MS), LIVE_IDLE_TIMEOUT_MS: "8000" } });
});
afterAll(async () => {
  await t.stop();
  files.stop();
  await closeMediaTools();
});

async function createStream(title: string) {
  const res = await t.api("/livestreams/", { method: "POST", json: { title } });
  expect(res.status).toBe(201);
  return (await ok(res, "createLivestream")).data.stream;
}

const getStream = (id: string) => getStreamOf(t, id);
const streamIn = (id: string, statuses: string[], timeoutMs?: number) => streamIn_(t, id, statuses, timeoutMs);

const videoDone = (id: string, timeoutMs = 120_000) =>
  waitFor(
    async () => {
      const b = await ok(t.api(`/videos/${id}/`), "getVideo");
      return ["COMPLETED", "ERROR"].includes(b.data?.video?.status) ? b.data : undefined;
    },
    { timeoutMs, what: `video ${id} transcoded` },
  );

/**
 * Sends `tags` in real time by their original timestamps (like an encoder),
 * but with the timestamps `retime` gives them: the publisher's clock can jump
 * while the media keeps flowing at its real pace.
 */
async function* realtimeRetimed(tags: MediaMessage[], retime: (ts: number) => number): AsyncIterable<MediaMessage> {
  const start = performance.now();
  for (const tag of tags) {
    const wait = start + tag.timestamp - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    yield { ...tag, timestamp: retime(tag.timestamp) };
  }
}

/** The recording FLV's media length, wherever it is: beside the live files, or kept as the video's original once transcoded. */
async function recordingSeconds(streamId: string, videoId: string): Promise<number> {
  const candidates = [join(t.dataDir, "recordings", `${streamId}.flv`), join(t.dataDir, "originals", videoId, "source.flv")];
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    for (const path of candidates) {
      if (!existsSync(path)) continue;
      try {
        return await mediaSeconds(path);
      } catch (err) {
        last = err; // moved between the check and the probe: look again
      }
    }
    await Bun.sleep(200);
  }
  throw new Error(`recording of ${streamId} not found or unreadable: ${String(last)}`);
}

/** The recording's media length by its packets (not by the metadata the encoder sent). */
async function mediaSeconds(flv: string): Promise<number> {
  const probe = await ffprobeJson(flv, ["-show_entries", "packet=pts_time,duration_time"]);
  const packets = (probe.packets as Array<{ pts_time?: string; duration_time?: string }>).filter((p) => p.pts_time !== undefined);
  const starts = packets.map((p) => Number(p.pts_time));
  const ends = packets.map((p) => Number(p.pts_time) + Number(p.duration_time ?? 0));
  return Math.max(...ends) - Math.min(...starts);
}

describe("live timestamps are re-based", () => {
  test("forward jumps of hours and a backward jump, in one session and across a reconnect: media length stays the wall-clock length", async () => {
    const s = await createStream("Jumpy clock");
    const tags = await fixtureTags(); // 6 s, 25 fps + AAC
    const HOUR = 3600_000;
    const wallStart = performance.now();
    // Session 1: normal for 2 s, then the clock jumps 3 h ahead, then 2 s later back to ~0.5 s.
    const first = publish({
      url: s.rtmp_url,
      tags: realtimeRetimed(tags, (ts) => (ts < 2000 ? ts : ts < 4000 ? ts + 3 * HOUR : ts - 3500)),
      pace: "fast",
    });
    await first.started;
    await streamIn(s.id, ["LIVE"], 15_000);
    await first.finished;
    // The service has seen the first encoder leave (on a loaded machine that can trail the client's close).
    await waitFor(async () => !t.service.live.ingest.local(s.id)?.broadcast.publishing, { timeoutMs: 30_000, what: "the first encoder gone" });
    // Session 2 (a reconnect within the window): the new encoder's clock starts 7 h in.
    const second = publish({ url: s.rtmp_url, tags: realtimeRetimed(tags, (ts) => ts + 7 * HOUR), pace: "fast" });
    await second.started;
    await second.finished;
    const wallSeconds = (performance.now() - wallStart) / 1000;

    const ended = await streamIn(s.id, ["ENDED"], RECONNECT_MS + 15_000);
    expect(ended.recording!.asset_id).toMatch(/^vid_/);
    // The live playlist never saw a giant segment.
    const playlist = parsePlaylist(await (await fetch(s.hls_url)).text());
    expect(playlist.ended).toBe(true);
    expect(Math.max(...playlist.durations)).toBeLessThanOrEqual(2 * SEGMENT_S);

    // The recording (FLV, read by ffprobe) is as long as the broadcast, within one segment.
    const media = await recordingSeconds(s.id, ended.recording!.asset_id);
    expect(Math.abs(media - wallSeconds)).toBeLessThanOrEqual(SEGMENT_S);
    expect(Math.abs(ended.duration_seconds! - wallSeconds)).toBeLessThanOrEqual(SEGMENT_S);
    expect(ended.recording!.duration_seconds).toBeLessThanOrEqual(wallSeconds + SEGMENT_S);

    const video = await videoDone(ended.recording!.asset_id);
    expect(video.video.status).toBe("COMPLETED");
    expect(Math.abs(video.video.duration_seconds! - wallSeconds)).toBeLessThanOrEqual(SEGMENT_S + 0.5);
  }, 120_000);
});

describe("DELETE /livestreams/{id}/ on air", () => {
  test("ends like /end/ (ENDED full shape, then RECORDING_READY, each once), deletes, and the recording completes in the library", async () => {
    const s = await createStream("Deleted on air");
    const pub = publish({ url: s.rtmp_url, tags: await fixtureTags(), pace: "realtime" });
    await pub.started;
    await streamIn(s.id, ["LIVE"], 15_000);
    const del = await t.api(`/livestreams/${s.id}/`, { method: "DELETE" });
    expect(del.status).toBe(200);
    expect((await ok(del, "deleteLivestream")).data).toEqual({ id: s.id, deleted: true });
    await expect(pub.finished).rejects.toThrow();
    expect((await t.api(`/livestreams/${s.id}/`)).status).toBe(404);

    // The answer came after the recording was announced: both events are there already.
    const events = await outboxEvents(t.service, s.id);
    expect(events.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
    expect(Object.keys(events[2]!.data.stream).sort()).toEqual(FULL_KEYS);
    expect(events[2]!.data.stream.status).toBe("ENDED");
    const ready = events[3]!.data;
    expect(Object.keys(ready.stream).sort()).toEqual(SMALL_KEYS);
    const assetId: string = ready.recording.asset_id;
    expect(assetId).toMatch(/^vid_/);
    expect(ready.recording.transcoding).toBe(true);

    const video = await videoDone(assetId);
    expect(video.video).toMatchObject({ status: "COMPLETED", kind: "LIVESTREAM_RECORDING" });
    expect(video.stream!.id).toBe(s.id);
    // Nothing more was announced for the deleted stream.
    expect((await outboxEvents(t.service, s.id)).map((e) => e.event)).toEqual(events.map((e) => e.event));
  }, 120_000);

  test("a ready stream nobody publishes to: ENDED once, then deleted", async () => {
    const s = await createStream("Never used");
    expect((await t.api(`/livestreams/${s.id}/`, { method: "DELETE" })).status).toBe(200);
    const events = (await outboxEvents(t.service, s.id)).map((e) => e.event);
    expect(events).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_ENDED"]);
    expect((await t.api(`/livestreams/${s.id}/`)).status).toBe(404);
  });
});

describe("GET /livestreams/{id}/ reflects the recording", () => {
  test("recording.transcoding turns false and playback_url is set once the recording video completed", async () => {
    const s = await createStream("Recorded");
    const pub = publish({ url: s.rtmp_url, tags: await fixtureTags(), pace: "realtime" });
    await pub.started;
    await streamIn(s.id, ["LIVE"], 15_000);
    await pub.finished;
    const ended = await streamIn(s.id, ["ENDED"], RECONNECT_MS + 15_000);
    expect(ended.recording!.transcoding).toBe(true);
    expect(ended.playback_url).toBeNull();
    const video = await videoDone(ended.recording!.asset_id);
    expect(video.video.status).toBe("COMPLETED");
    const after = await waitFor(
      async () => {
        const st = await getStream(s.id);
        return st.recording!.transcoding === false ? st : undefined;
      },
      { timeoutMs: 10_000, what: "recording.transcoding false" },
    );
    expect(after.playback_url).toBe(video.video.url);
    // The list says the same.
    const listed = (await ok(t.api("/livestreams/?limit=100"), "listLivestreams")).data.items.find((i: any) => i.id === s.id);
    expect(listed!.recording!.transcoding).toBe(false);
  }, 120_000);

  test("also when the in-memory notice was missed: the GET reads the recording video's state", async () => {
    // A stream ended without media, then given a recording whose video completes without notifying it (an upload has
    // no `stream` link, as if another process had run the transcode): only reading the video can get it right.
    const s = await createStream("Missed notice");
    await t.api(`/livestreams/${s.id}/end/`, { method: "POST" });
    const reg = await t.api("/videos/", { method: "POST", json: { source_url: files.url("av-360p-2s.mp4"), title: "rec" } });
    expect(reg.status).toBe(201);
    const videoId = (await ok(reg, "createVideo")).data.video.id;
    const video = await videoDone(videoId);
    expect(video.video.status).toBe("COMPLETED");
    await t.service.runtime.send("livestream", s.id, {
      type: "RECORDING_ATTACHED",
      recording: { asset_id: videoId, transcoding: true, duration_seconds: 2, resolution: "640x360", width: 640, height: 360 },
    });
    const st = await getStream(s.id);
    expect(st.recording!.transcoding).toBe(false);
    expect(st.playback_url).toBe(video.video.url);
    // Stored, not only computed: the stream actor itself was brought up to date.
    const rec = await t.service.runtime.get("livestream", s.id);
    expect(rec!.context.recording!.transcoding).toBe(false);
  }, 120_000);
});

/**
 * Issue 23 (15): deleting the recording left its stream showing `playback_url` and `recording.asset_id`,
 * both 404. They become null, whether the recording was deleted once playable or while it transcoded.
 */
describe("deleting the recording video", () => {
  async function endedWithRecording(title: string) {
    const s = await createStream(title);
    const pub = publish({ url: s.rtmp_url, tags: await fixtureTags(), pace: "fast" });
    await pub.started;
    await pub.finished.catch(() => undefined);
    return { s, ended: await streamIn(s.id, ["ENDED"], RECONNECT_MS + 30_000) };
  }
  const streamWithout = (id: string) =>
    waitFor(
      async () => {
        const st = await getStream(id);
        return st.recording === null && st.playback_url === null ? st : undefined;
      },
      { timeoutMs: 20_000, what: "the stream without its recording" },
    );

  test("once playable: playback_url and recording become null on GET and in the list", async () => {
    const { s, ended } = await endedWithRecording("Recording deleted");
    const video = await videoDone(ended.recording!.asset_id);
    expect(video.video.status).toBe("COMPLETED");
    const linked = await waitFor(async () => ((await getStream(s.id)).playback_url ? getStream(s.id) : undefined), { timeoutMs: 20_000, what: "playback_url set" });
    expect(linked.playback_url).toBe(video.video.url);

    expect((await t.api(`/videos/${video.video.id}/`, { method: "DELETE" })).status).toBeLessThan(300);
    expect((await fetch(video.video.url!)).status).toBe(404);
    const after = await streamWithout(s.id);
    expect(after).toMatchObject({ status: "ENDED", playback_url: null, recording: null });
    const listed = (await ok(t.api("/livestreams/?limit=100"), "listLivestreams")).data.items.find((i: any) => i.id === s.id);
    expect(listed).toMatchObject({ playback_url: null, recording: null });
    // Stored, not only computed.
    const rec = await t.service.runtime.get("livestream", s.id);
    expect([rec!.context.recording, rec!.context.playbackUrl]).toEqual([null, null]);
  }, 180_000);

  test("while it transcodes: the stream ends up without a recording, never with a dead link", async () => {
    const { s, ended } = await endedWithRecording("Recording deleted early");
    expect(ended.recording!.transcoding).toBe(true);
    expect((await t.api(`/videos/${ended.recording!.asset_id}/`, { method: "DELETE" })).status).toBeLessThan(300);
    expect(await streamWithout(s.id)).toMatchObject({ status: "ENDED", playback_url: null, recording: null });
    // Nothing brings it back (the transcode was cancelled with the video).
    await Bun.sleep(2000);
    expect(await getStream(s.id)).toMatchObject({ playback_url: null, recording: null });
  }, 180_000);
});

/** Issue 23 (16): an organization with transcoding off still got its recordings transcoded. */
test("an organization without transcoding: the broadcast works, its recording is not kept (recording null, no RECORDING_READY, no video, no FLV)", async () => {
  const { org, apiKey } = await t.service.orgs.createOrg("live-no-transcode");
  await t.service.orgs.updateSettings(org.id, (s) => ({ ...s, transcoding: null }));
  const created = await t.api("/livestreams/", { method: "POST", json: { title: "Not recorded" }, key: apiKey });
  expect(created.status).toBe(201);
  const s = (await ok(created, "createLivestream")).data.stream;
  const get = async () => (await ok(t.api(`/livestreams/${s.id}/`, { key: apiKey }), "getLivestream")).data.stream;
  const pub = publish({ url: s.rtmp_url, tags: await fixtureTags(), pace: "fast" });
  await pub.started;
  // Polled once a second: this organization's key has the default 120 requests a minute.
  await waitFor(async () => (await get()).status === "LIVE" || undefined, { timeoutMs: 60_000, intervalMs: 1000, what: "LIVE" });
  await pub.finished.catch(() => undefined);
  const ended = await waitFor(
    async () => {
      const st = await get();
      return st.status === "ENDED" ? st : undefined;
    },
    { timeoutMs: RECONNECT_MS + 60_000, intervalMs: 1000, what: "ENDED" },
  );
  expect(ended).toMatchObject({ recording: null, playback_url: null });
  const events = await outboxEvents(t.service, s.id);
  expect(events.map((e) => e.event)).not.toContain("LIVESTREAM_RECORDING_READY");
  expect(events.find((e) => e.event === "LIVESTREAM_ENDED")!.data.recording).toBeNull();
  const videos = (await ok(t.api("/videos/", { key: apiKey }), "listVideos")).data.items;
  expect(videos).toEqual([]);
  await waitFor(async () => !existsSync(join(t.dataDir, "recordings", `${s.id}.flv`)) || undefined, { timeoutMs: 10_000, what: "FLV removed" });
}, 120_000);

describe("duration_seconds", () => {
  test("excludes the reconnect window after the last publisher left", async () => {
    const s = await createStream("Timed");
    const started = performance.now();
    const pub = publish({ url: s.rtmp_url, tags: await fixtureTags(), pace: "realtime" });
    await pub.started;
    await pub.finished;
    const onAir = (performance.now() - started) / 1000; // ~6 s; the stream ends RECONNECT_MS later
    const ended = await streamIn(s.id, ["ENDED"], RECONNECT_MS + 15_000);
    expect(Math.abs(ended.duration_seconds! - onAir)).toBeLessThanOrEqual(1);
    const endedEvent = (await outboxEvents(t.service, s.id)).find((e) => e.event === "LIVESTREAM_ENDED")!;
    expect(endedEvent.data.stream.duration_seconds).toBe(ended.duration_seconds);
  }, 240_000);

  test("is null for a stream that never broadcast: ended before publishing, idle end, and a publisher that sent no media", async () => {
    const explicit = await createStream("Ended unused");
    await t.api(`/livestreams/${explicit.id}/end/`, { method: "POST" });
    expect((await getStream(explicit.id)).duration_seconds).toBeNull();

    const idle = await createStream("Idle");
    const idleEnded = await streamIn(idle.id, ["ENDED"], 40_000);
    expect(idleEnded.duration_seconds).toBeNull();
    const idleEvent = (await outboxEvents(t.service, idle.id)).find((e) => e.event === "LIVESTREAM_ENDED")!;
    expect(idleEvent.data.stream.duration_seconds).toBeNull();

    const silent = await createStream("Silent publisher");
    const pub = publish({ url: silent.rtmp_url, tags: [] });
    await pub.started;
    await pub.finished;
    const silentEnded = await streamIn(silent.id, ["ENDED"], RECONNECT_MS + 15_000);
    expect(silentEnded.duration_seconds).toBeNull();
    expect(silentEnded.recording).toBeNull();
  }, 240_000);
});
