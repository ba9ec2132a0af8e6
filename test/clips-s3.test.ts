import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { frameCounterSourceArgs } from "../media/transcoder/frame-counter-source.ts";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { ffmpeg, lumas, probeDuration, videoWaiters } from "./support/clip-media.ts";
import { outboxEvents } from "./support/events.ts";
import { looped } from "./support/looped-tags.ts";
import { startS3rver, type S3Server } from "./support/s3rver.ts";
import { streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 27 items 5 and C of its follow-up: clips with STORAGE=s3 (a real s3rver): a clip of a video (its parent's
 * original is an object, downloaded to cut) and a clip of a live stream (its copy of the recording is an object)
 * play: ffprobe's duration and the first frame's pixels. A failed live clip keeps its copy in the bucket and a
 * retry makes it.
 */

let s3: S3Server;
let t: TestService;
let dir: string;
let files: ReturnType<typeof Bun.serve>;

// Answers of several shapes read by one helper: untyped on purpose.
const json = async (r: Response) => (await r.json()) as any;
const LUMA_STEP = 6;
const FPS = 10;

const { settled, completed } = videoWaiters(() => t);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "clips-s3-"));
  // 4 s at 10 fps, 160x120: frame n is flat grey of luma 16 + 6n (a decoded frame names its number).
  await ffmpeg(frameCounterSourceArgs(join(dir, "source.mp4"), { size: "160x120", fps: FPS, seconds: 4, lumaStep: LUMA_STEP }));
  files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(join(dir, "source.mp4"))) });
  s3 = await startS3rver();
  t = await startTestService({ env: { ...s3.env, MEDIA_BACKEND: "native", TRANSCODE_WORKERS: "1" } });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, transcoding: { ladder: [{ name: "120p", height: 120, videoBitrateKbps: 300, audioBitrateKbps: 64 }] } }));
}, 240_000);

afterAll(async () => {
  files?.stop(true);
  await t?.stop();
  await s3?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("clips with STORAGE=s3", () => {
  test("a clip of a video plays: its duration and first frame are the span's", async () => {
    const r = await t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${files.port}/source.mp4` } });
    const parent = await completed((await json(r)).data.asset.public_id);
    const made = await t.api(`/videos/${parent.video.id}/clips/`, { method: "POST", json: { start_time: 1.2, end_time: 2.5 } });
    expect(made.status).toBe(201);
    const done = await completed((await json(made)).data.video.id);
    const playlist = done.renditions[0]!.url as string;
    expect(Math.abs((await probeDuration(playlist)) - 1.3)).toBeLessThanOrEqual(1 / FPS);
    // Frame 12 (1.2 s at 10 fps) first, frame 24 last.
    const frames = (await lumas(playlist)).map((l) => Math.round((l - 16) / LUMA_STEP));
    expect(frames).toEqual([12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);
    expect(await t.service.objects.stat(`work/${done.video.id}/live.flv`)).toBeNull();
  });

  test("a clip of a live stream plays while on air; a failed one keeps its copy in the bucket and a retry makes it", async () => {
    const stream = (await json(await t.api("/livestreams/", { method: "POST", json: { title: "On air" } }))).data.stream;
    const liveClip = () => t.api(`/livestreams/${stream.id}/clips/`, { method: "POST", json: { seconds: 2 } });
    const pub = publish({ url: stream.rtmp_url, form: "ffmpeg", tags: looped(await fixtureTags(), 30), pace: "realtime", unpublishAtEnd: false });
    try {
      await pub.started;
      await streamIn(t, stream.id, ["LIVE"], 60_000);
      await Bun.sleep(3000);
      const r = await liveClip();
      expect(r.status).toBe(201);
      const done = await completed((await json(r)).data.video.id);
      const playlist = done.renditions[0]!.url as string;
      expect(Math.abs((await probeDuration(playlist)) - 2)).toBeLessThanOrEqual(0.1);
      // The first frame decodes to a picture (the fixture's frames are not black).
      expect((await lumas(playlist))[0]).toBeGreaterThan(20);

      // Unreadable for a while (a transient fault of the store), then readable again: the copy outlives the failure.
      await t.service.runner.stop();
      const failing = (await json(await liveClip())).data.video;
      const key = `work/${failing.id}/live.flv`;
      const copy = join(dir, "copy.flv");
      expect(await t.service.objects.download(key, copy)).toBeTruthy();
      await Bun.write(join(dir, "garbage.flv"), "not a video at all\n");
      await t.service.objects.putFile(key, join(dir, "garbage.flv"), { type: "video/x-flv" });
      t.service.runner.start();
      expect((await settled(failing.id)).video.status).toBe("ERROR");
      expect(await t.service.objects.stat(key)).not.toBeNull();
      await t.service.objects.putFile(key, copy, { type: "video/x-flv" });
      expect((await t.api(`/videos/${failing.id}/retry/`, { method: "POST" })).status).toBe(200);
      const again = await completed(failing.id);
      expect(Math.abs((await probeDuration(again.renditions[0]!.url)) - 2)).toBeLessThanOrEqual(0.1);
      expect(await t.service.objects.stat(key)).toBeNull();
      expect((await outboxEvents(t.service, failing.id)).map((e) => e.event)).toEqual([
        "VIDEO_UPLOADED",
        "VIDEO_TRANSCODING_FAILED",
        "VIDEO_TRANSCODING_STARTED",
        "VIDEO_PLAYABLE",
        "VIDEO_TRANSCODING_COMPLETED",
      ]);
    } finally {
      await pub.close();
    }
    await streamIn(t, stream.id, ["ENDED"], 60_000);
  });
});
