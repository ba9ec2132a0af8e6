import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { frameCounterSourceArgs } from "../media/transcoder/frame-counter-source.ts";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { ffmpeg, lumas, probeDuration, run, videoWaiters } from "./support/clip-media.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { looped } from "./support/looped-tags.ts";
import { getStream, streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 27 item 5, black-box: clips of a real transcoded video whose every frame is one flat grey of its own
 * (frame n has luma 16 + 6n, 10 fps, 4 s, one keyframe), so a decoded frame names its number; checked by ffprobe
 * and decoded pixels. Refusals (422, 404, 409) and the parent deleted from under a clip.
 */

let t: TestService;
let dir: string;
let files: ReturnType<typeof Bun.serve>;
let parent: any;
let otherKey: string;
let firstClip: string;

// Answers of several shapes (videos, errors) read by one helper: untyped on purpose.
const json = async (r: Response) => (await r.json()) as any;
const LUMA_STEP = 6;
const FPS = 10;

/** The frame whose luma this is (frame n is 16 + 6n: video range starts at 16). */
const frameOf = (luma: number) => Math.round((luma - 16) / LUMA_STEP);

const { video, settled, completed } = videoWaiters(() => t);

const clip = (id: string, body: unknown, key?: string) => t.api(`/videos/${id}/clips/`, { method: "POST", json: body, key });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "clips-"));
  // 4 s at 10 fps, 160x120: frame n is flat grey of luma 16 + 6n; one keyframe (the cut must decode up to its start); a tone.
  await ffmpeg(frameCounterSourceArgs(join(dir, "source.mp4"), { size: "160x120", fps: FPS, seconds: 4, lumaStep: LUMA_STEP }));
  files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(join(dir, "source.mp4"))) });
  t = await startTestService({ env: { MEDIA_BACKEND: "native" } });
  const ladder = { transcoding: { ladder: [{ name: "120p", height: 120, videoBitrateKbps: 300, audioBitrateKbps: 64 }] } };
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, ...ladder }));
  const other = await t.service.orgs.createOrg("other");
  otherKey = other.apiKey;
  await t.service.orgs.updateSettings(other.org.id, (s) => ({ ...s, ...ladder }));
  const r = await t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${files.port}/source.mp4`, title: "grey ramp" } });
  expect(r.status).toBe(201);
  parent = await completed((await json(r)).data.asset.public_id);
}, 240_000);

afterAll(async () => {
  files?.stop(true);
  await t?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a clip of a video", () => {
  // The first clip, a parent in its turn below.
  test("is a new video with source_video_id, cut to the frame: its duration (ffprobe) and first frame (pixels) are the span's", async () => {
    const r = await clip(parent.video.id, { start_time: 1.2, end_time: 2.5 });
    expect(r.status).toBe(201);
    const created = (await json(r)).data;
    firstClip = created.video.id;
    expect(created.video).toMatchObject({ status: "TRANSCODING", source_video_id: parent.video.id, source_stream_id: null, title: "grey ramp (1.2-2.5 s)" });
    const done = await completed(created.video.id);
    expect(done.video.source_video_id).toBe(parent.video.id);
    const playlist = done.renditions[0]!.url as string;

    const probe = JSON.parse(
      new TextDecoder().decode(await run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames:format=duration", "-of", "json", playlist])),
    );
    // 1.2 s to 2.5 s at 10 fps: frames 12 to 24, 1.3 s (within one frame).
    expect(Number(probe.streams[0].nb_read_frames)).toBe(13);
    expect(Math.abs(Number(probe.format.duration) - 1.3)).toBeLessThanOrEqual(1 / FPS);

    const clipFrames = await lumas(playlist);
    const parentFrames = await lumas(parent.renditions[0].url);
    expect(parentFrames.map(frameOf).slice(0, 40)).toEqual([...Array(40).keys()]);
    // The clip's first frame is the parent's frame at start_time (frame 12), not a neighbour; its last is frame 24.
    expect(Math.abs(clipFrames[0]! - parentFrames[12]!)).toBeLessThan(LUMA_STEP / 2);
    expect(clipFrames.map(frameOf)).toEqual([12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);

    const events = (await outboxEvents(t.service, created.video.id)).map((e) => e.event);
    expect(events).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
  });

  test("bad spans: 422 naming each field; another organization's video: 404 as for a missing id", async () => {
    const cases: Array<[unknown, Record<string, string | RegExp>]> = [
      [{}, { start_time: "is required", end_time: "is required" }],
      [
        { start_time: -1, end_time: "2" },
        { start_time: /at least 0/, end_time: /number of seconds/ },
      ],
      [{ start_time: 2, end_time: 1 }, { end_time: "must be greater than start_time" }],
      [{ start_time: 1, end_time: 99 }, { end_time: /at most the video's length, 4 s/ }],
      [
        { start_time: 5, end_time: 6 },
        { start_time: /less than the video's length/, end_time: /at most the video's length/ },
      ],
      [
        { start_time: 0, end_time: 1, title: "", extra: 1 },
        { title: /characters/, extra: "is not a known field" },
      ],
    ];
    for (const [body, fields] of cases) {
      const r = await clip(parent.video.id, body);
      expect(r.status).toBe(422);
      const details = (await json(r)).error.details;
      expect(Object.keys(details).sort()).toEqual(Object.keys(fields).sort());
      for (const [k, v] of Object.entries(fields)) expect(details[k]).toMatch(v);
    }
    const foreign = await clip(parent.video.id, { start_time: 0, end_time: 1 }, otherKey);
    const missing = await clip("vid_doesnotexist", { start_time: 0, end_time: 1 }, otherKey);
    expect(foreign.status).toBe(404);
    expect((await json(foreign)).error).toEqual((await json(missing)).error);
  });

  test("only from a COMPLETED video: 409 VIDEO_NOT_COMPLETED naming its status", async () => {
    await t.service.runner.stop();
    const r = await t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${files.port}/other.mp4` } });
    const id = (await json(r)).data.asset.public_id;
    const refused = await clip(id, { start_time: 0, end_time: 1 });
    t.service.runner.start();
    expect(refused.status).toBe(409);
    expect((await json(refused)).error).toMatchObject({ code: "VIDEO_NOT_COMPLETED", details: { status: "TRANSCODING" } });
    expect((await t.api(`/videos/${id}/`, { method: "DELETE" })).status).toBe(200);
  });
});

/** The one file under `prefix` of the local store (DATA_DIR): a kept original, a live clip's copy of the recording. */
function storedFile(prefix: string): string {
  const dir = join(t.dataDir, prefix);
  return join(dir, readdirSync(dir)[0]!);
}

/** Runs `fn` with `path` unreadable as media (its bytes replaced by text), then puts the bytes back: a transient fault of the store. */
async function garbled<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const bytes = readFileSync(path);
  writeFileSync(path, "not a video at all\n");
  try {
    return await fn();
  } finally {
    writeFileSync(path, bytes);
  }
}

describe("retrying a clip that failed (issue 27)", () => {
  test("a clip of a video that failed while its parent is there is cut again from the parent by POST /videos/{id}/retry/", async () => {
    await t.service.runner.stop();
    const failing = (await json(await clip(parent.video.id, { start_time: 0.5, end_time: 1.5 }))).data.video;
    const failed = await garbled(storedFile(`originals/${parent.video.id}`), async () => {
      t.service.runner.start();
      return settled(failing.id);
    });
    expect(failed.video.status).toBe("ERROR");
    const r = await t.api(`/videos/${failing.id}/retry/`, { method: "POST" });
    expect(r.status).toBe(200);
    const done = await completed(failing.id);
    expect((await lumas(done.renditions[0]!.url)).map(frameOf)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect((await outboxEvents(t.service, failing.id)).map((e) => e.event)).toEqual([
      "VIDEO_UPLOADED",
      "VIDEO_TRANSCODING_FAILED",
      "VIDEO_TRANSCODING_STARTED",
      "VIDEO_PLAYABLE",
      "VIDEO_TRANSCODING_COMPLETED",
    ]);
  });
});

describe("the parent deleted while a clip is being made (docs/decisions.md, Clips)", () => {
  test("before the clip has cut its copy: the clip fails with SOURCE_VIDEO_DELETED; a retry is 409 CLIP_SOURCE_GONE, nothing queued", async () => {
    // The first clip is the parent here (a clip of a clip). Nothing runs while it goes: the new clip cannot have cut yet.
    await t.service.runner.stop();
    const early = (await json(await clip(firstClip, { start_time: 0, end_time: 1 }))).data.video;
    expect((await t.api(`/videos/${firstClip}/`, { method: "DELETE" })).status).toBe(200);
    t.service.runner.start();
    const failed = await settled(early.id);
    expect(failed.video.status).toBe("ERROR");
    expect(failed.error!.code).toBe("SOURCE_VIDEO_DELETED");
    expect(failed.video.source_video_id).toBe(firstClip);
    const retried = await t.api(`/videos/${early.id}/retry/`, { method: "POST" });
    expect(retried.status).toBe(409);
    expect((await json(retried)).error).toMatchObject({ code: "CLIP_SOURCE_GONE", details: { source_video_id: firstClip } });
    expect((await video(early.id)).video.status).toBe("ERROR");
    expect((await outboxEvents(t.service, early.id)).map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_FAILED"]);
  });

  test("after the clip has cut its copy (its transcode started): the clip completes without its parent", async () => {
    const late = (await json(await clip(parent.video.id, { start_time: 2, end_time: 3 }))).data.video;
    await waitFor(async () => (await video(late.id)).video.transcoder_id, { timeoutMs: 120_000, what: "the clip's transcode to start" });
    expect((await t.api(`/videos/${parent.video.id}/`, { method: "DELETE" })).status).toBe(200);
    const done = await completed(late.id);
    expect((await lumas(done.renditions[0]!.url)).map(frameOf)).toEqual([20, 21, 22, 23, 24, 25, 26, 27, 28, 29]);
  });
});

describe("a clip of a live stream", () => {
  test("while LIVE: a video of the last seconds, COMPLETED before the broadcast ends; 409 when not LIVE, 422 past the window", async () => {
    const stream = (await json(await t.api("/livestreams/", { method: "POST", json: { title: "On air" } }))).data.stream;
    const liveClip = (body: unknown, key?: string) => t.api(`/livestreams/${stream.id}/clips/`, { method: "POST", json: body, key });
    const notLive = await liveClip({ seconds: 2 });
    expect(notLive.status).toBe(409);
    expect((await json(notLive)).error).toMatchObject({ code: "STREAM_NOT_LIVE", details: { status: "READY_TO_STREAM" } });
    expect((await liveClip({ seconds: 2 }, otherKey)).status).toBe(404);
    const tooLong = await liveClip({ seconds: 31 });
    expect(tooLong.status).toBe(422);
    expect(Object.keys((await json(tooLong)).error.details)).toEqual(["seconds"]);

    // The 6 s fixture looped for 180 s, paced as live: on air until the clip is checked, however slow the machine.
    const pub = publish({ url: stream.rtmp_url, form: "ffmpeg", tags: looped(await fixtureTags(), 30), pace: "realtime", unpublishAtEnd: false });
    try {
      await pub.started;
      await streamIn(t, stream.id, ["LIVE"], 60_000);
      await Bun.sleep(3000);
      const r = await liveClip({ seconds: 2 });
      expect(r.status).toBe(201);
      const created = (await json(r)).data.video;
      expect(created).toMatchObject({ status: "TRANSCODING", source_stream_id: stream.id, source_video_id: null });
      const done = await completed(created.id);
      // Available before the broadcast ends.
      expect((await getStream(t, stream.id)).status).toBe("LIVE");
      expect(Math.abs((await probeDuration(done.renditions[0]!.url)) - 2)).toBeLessThanOrEqual(0.1);
      expect((await outboxEvents(t.service, created.id)).map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);

      // A live clip that failed (its copy of the recording unreadable for a while) keeps that copy: a retry makes it.
      await t.service.runner.stop();
      const failing = (await json(await liveClip({ seconds: 2 }))).data.video;
      const failed = await garbled(storedFile(`work/${failing.id}`), async () => {
        t.service.runner.start();
        return settled(failing.id);
      });
      expect(failed.video.status).toBe("ERROR");
      const retried = await t.api(`/videos/${failing.id}/retry/`, { method: "POST" });
      expect(retried.status).toBe(200);
      const again = await completed(failing.id);
      expect(Math.abs((await probeDuration(again.renditions[0]!.url)) - 2)).toBeLessThanOrEqual(0.1);

      // Its copy removed (retention's sweep of work files): 409 CLIP_SOURCE_GONE naming the stream, nothing queued.
      await t.service.runner.stop();
      const lost = (await json(await liveClip({ seconds: 2 }))).data.video;
      await garbled(storedFile(`work/${lost.id}`), async () => {
        t.service.runner.start();
        return settled(lost.id);
      });
      rmSync(join(t.dataDir, "work", lost.id), { recursive: true, force: true });
      const refused = await t.api(`/videos/${lost.id}/retry/`, { method: "POST" });
      expect(refused.status).toBe(409);
      expect((await json(refused)).error).toMatchObject({ code: "CLIP_SOURCE_GONE", details: { source_stream_id: stream.id } });
      expect((await video(lost.id)).video.status).toBe("ERROR");
    } finally {
      await pub.close();
    }
    await streamIn(t, stream.id, ["ENDED"], 60_000);
  });
});
