import { expect, test } from "bun:test";
import { EVENT_NAMES } from "./event-names.ts";
import { sampleEventData } from "./sample-events.ts";

const opts = { baseUrl: "https://video.example.com" };

test("every event of the reference has a sample", () => {
  for (const e of EVENT_NAMES) expect(Object.keys(sampleEventData(e, opts)).length).toBeGreaterThan(0);
});

test("video samples carry the statuses of spec 3", () => {
  const d = (e: (typeof EVENT_NAMES)[number]) => sampleEventData(e, opts) as { video: Record<string, unknown>; renditions: unknown[]; error: unknown };
  expect(d("VIDEO_UPLOADED").video.status).toBe("TRANSCODING");
  expect(d("VIDEO_TRANSCODING_STARTED").video.transcoder_id).toBeString();
  const done = d("VIDEO_TRANSCODING_COMPLETED");
  expect(done.video).toMatchObject({ status: "COMPLETED", kind: "UPLOAD", size_bytes: "7340032" });
  expect(String(done.video.url)).toStartWith("https://video.example.com/media/");
  expect(done.renditions).toHaveLength(2);
  expect(d("VIDEO_TRANSCODING_FAILED")).toMatchObject({ video: { status: "ERROR" }, error: { code: "SOURCE_UNREADABLE" } });
});

test("stream samples use the full and the small shapes", () => {
  const scheduled = sampleEventData("LIVESTREAM_SCHEDULED", opts) as { stream: Record<string, unknown> };
  expect(scheduled.stream).toMatchObject({ status: "SCHEDULED", playback_url: null });
  expect(scheduled.stream.public_id).toBe(scheduled.stream.id);
  expect(String(scheduled.stream.rtmp_url)).toStartWith("rtmp://video.example.com:1935/live/");
  expect((sampleEventData("LIVESTREAM_STARTED", opts) as { stream: { status: string; started_at: string } }).stream.started_at).toBeString();
  const ready = sampleEventData("LIVESTREAM_RECORDING_READY", opts) as { stream: Record<string, unknown>; recording: Record<string, unknown> };
  expect(ready.stream).toMatchObject({ status: "ENDED", latency: "NORMAL" });
  expect(ready.recording).toMatchObject({ transcoding: true, width: 1280, height: 720 });
  expect(String(ready.recording.asset_id)).toStartWith("vid_");
});
