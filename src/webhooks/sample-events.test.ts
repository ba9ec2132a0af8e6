import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createActor } from "xstate";
import type { DomainEvent } from "../../machines/contracts.ts";
import { livestreamMachine } from "../../machines/livestream-machine.ts";
import { streamInput, videoInput } from "../../machines/test-contexts.ts";
import { videoMachine } from "../../machines/video-machine.ts";
import { EVENT_NAMES } from "./event-names.ts";
import { SAMPLE_FAILURE, sampleEventData } from "./sample-events.ts";

const opts = { baseUrl: "https://video.example.com" };

/** Keys at every depth (scalars and null are leaves, arrays the set of their elements' shapes; `tags` is the caller's). */
function shape(value: unknown, key?: string): unknown {
  if (key === "tags") return "tags";
  if (Array.isArray(value)) return [...new Set(value.map((v) => JSON.stringify(shape(v))))].sort().map((s) => JSON.parse(s));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, shape((value as Record<string, unknown>)[k], k)]),
    );
  return "leaf";
}

/**
 * A clock whose timers never fire: the runs are driven by events only. XState's own clock would arm a real
 * setTimeout for the booked stream's lead (2099: ~2.3e12 ms, past its 32-bit limit), which fires after 1 ms
 * with a TimeoutOverflowWarning, and the actor, never stopped, ran on to `ready` and `ended` after the test.
 */
const stoppedClock = { setTimeout: () => 0, clearTimeout: () => {} };

/** What the machines emit for the test contexts, driven with the pipeline's events. */
function machineRun(): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  const run = (machine: typeof videoMachine | typeof livestreamMachine, input: unknown, events: unknown[]) => {
    const actor = createActor(machine as typeof videoMachine, { input: input as never, clock: stoppedClock });
    actor.on("domain", (e: DomainEvent) => void (out.has(e.event) || out.set(e.event, e.data)));
    actor.start();
    for (const e of events) actor.send(e as never);
    actor.stop();
  };
  const outcome = {
    url: "u",
    durationSeconds: 2,
    sizeBytes: 10,
    renditions: [{ quality: "360p", url: "u", width: 640, height: 360, download_url: "d", download_size_bytes: "5", download_password: null }],
    storage: { total_bytes: "1", hls_bytes: "1", download_bytes: "0", original_bytes: "0" },
  };
  run(videoMachine, videoInput(), [
    { type: "TRANSCODING_STARTED", transcoderId: "native-x" },
    { type: "TRANSCODING_COMPLETED", outcome },
  ]);
  run(videoMachine, videoInput(), [{ type: "TRANSCODING_FAILED", error: { code: "SOURCE_NOT_FOUND", message: "m" } }]);
  run(livestreamMachine, streamInput({ scheduledAt: "2099-01-01T00:00:00.000Z", tags: { a: 1 } }), []);
  const recording = { asset_id: "vid_r", transcoding: true, duration_seconds: 6, resolution: "640x360", width: 640, height: 360 };
  run(livestreamMachine, streamInput({ tags: { a: 1 } }), [
    { type: "MEDIA_OBSERVED", at: "t" },
    { type: "PIPELINE_ENDED", at: "t", durationSeconds: 6, transcodingInSecs: null, recording },
  ]);
  return out;
}

test("every event's sample is what the machines emit for that event: the same keys at every depth", () => {
  const real = machineRun();
  // A simulcast output's events are written by the output runner, not a machine: test/webhooks-sample-events.test.ts
  // compares their samples with the events of a real broadcast.
  const runnerEvents = new Set(["LIVESTREAM_OUTPUT_ACTIVE", "LIVESTREAM_OUTPUT_FAILED"]);
  for (const e of EVENT_NAMES.filter((name) => !runnerEvents.has(name))) {
    expect(real.has(e)).toBe(true);
    expect([e, shape(sampleEventData(e, opts))]).toEqual([e, shape(real.get(e))]);
  }
});

test("the machine runs arm no real timer (a booked stream's lead is decades away: past setTimeout's 32-bit limit)", async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on("warning", onWarning);
  try {
    machineRun();
    await Bun.sleep(20);
  } finally {
    process.off("warning", onWarning);
  }
  expect(warnings).toEqual([]);
});

test("video samples carry the statuses of spec 3", () => {
  const d = (e: (typeof EVENT_NAMES)[number]) => sampleEventData(e, opts) as { video: Record<string, unknown>; renditions: unknown[]; error: unknown; storage: unknown };
  expect(d("VIDEO_UPLOADED").video.status).toBe("TRANSCODING");
  expect(d("VIDEO_TRANSCODING_STARTED").video.transcoder_id).toStartWith("native-");
  const done = d("VIDEO_TRANSCODING_COMPLETED");
  expect(done.video).toMatchObject({ status: "COMPLETED", kind: "UPLOAD", size_bytes: "7340032", download_quality: "720p" });
  expect(String(done.video.url)).toStartWith("https://video.example.com/media/");
  expect(done.renditions).toHaveLength(2);
  expect(Object.keys(done.storage as object).sort()).toEqual(["download_bytes", "hls_bytes", "original_bytes", "total_bytes"]);
  const failed = d("VIDEO_TRANSCODING_FAILED");
  expect(failed).toMatchObject({ video: { status: "ERROR" }, error: SAMPLE_FAILURE });
  expect(failed.video).not.toHaveProperty("transcoder_id"); // the fetch stage fails before any transcode starts
});

test("the failure sample uses a code from the pipeline's documented failure codes", () => {
  const decisions = readFileSync(join(import.meta.dir, "../../docs/decisions.md"), "utf8");
  const bullet = /\*\*Failure codes\*\*[\s\S]*?(?=\n- \*\*)/.exec(decisions)![0];
  const codes = [...bullet.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]);
  expect(codes).toContain("SOURCE_NOT_FOUND");
  expect(codes).toContain(SAMPLE_FAILURE.code);
  expect(codes).not.toContain("SOURCE_UNREADABLE");
});

test("stream samples use the full and the small shapes", () => {
  const scheduled = sampleEventData("LIVESTREAM_SCHEDULED", opts) as { stream: Record<string, unknown> };
  expect(scheduled.stream).toMatchObject({ status: "SCHEDULED", playback_url: null });
  expect(scheduled.stream.public_id).toBe(scheduled.stream.id);
  expect(String(scheduled.stream.rtmp_url)).toMatch(/^rtmp:\/\/video\.example\.com:1935\/live\/[0-9A-Za-z]+\?sig=[0-9a-f]{32}$/);
  expect((sampleEventData("LIVESTREAM_STARTED", opts) as { stream: { status: string; started_at: string } }).stream).toMatchObject({ status: "LIVE", started_at: expect.any(String) });
  for (const e of ["LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"] as const) {
    const ready = sampleEventData(e, opts) as { stream: Record<string, unknown>; recording: Record<string, unknown> };
    expect(ready.stream).toMatchObject({ status: "ENDED", latency: "NORMAL", duration_seconds: 1800 });
    expect(ready.recording).toMatchObject({ transcoding: true, width: 1280, height: 720 });
    expect(String(ready.recording.asset_id)).toStartWith("vid_");
  }
});
