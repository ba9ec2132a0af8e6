import { describe, expect, test } from "bun:test";
import { createActor } from "xstate";
import type { DomainEvent } from "./contracts.ts";
import { livestreamMachine, migrateStream, streamDelays, streamStatus } from "./livestream-machine.ts";
import type { RecordingInfo } from "./livestream-payload.ts";
import { streamInput, FULL_STREAM_KEYS, SMALL_STREAM_KEYS } from "./test-contexts.ts";

function start(scheduledAt: string | null = null) {
  const emitted: DomainEvent[] = [];
  const actor = createActor(livestreamMachine, { input: streamInput({ scheduledAt }) });
  actor.on("domain", (e) => emitted.push(e));
  actor.start();
  const status = () => streamStatus(actor.getSnapshot().value);
  return { actor, emitted, status };
}

const recording: RecordingInfo = { asset_id: "vid_rec", transcoding: true, duration_seconds: 6, resolution: "640x360", width: 640, height: 360 };
const FULL_KEYS = FULL_STREAM_KEYS;
const SMALL_KEYS = SMALL_STREAM_KEYS;

describe("live stream machine", () => {
  test("created right away: READY_TO_STREAM and SCHEDULED event with the full shape", () => {
    const { emitted, status } = start();
    expect(status()).toBe("READY_TO_STREAM");
    expect(emitted.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED"]);
    const s = (emitted[0]!.data as any).stream;
    expect(Object.keys(s).sort()).toEqual(FULL_KEYS);
    expect(s.status).toBe("READY_TO_STREAM");
    expect(s.public_id).toBe(s.id);
    expect(s.playback_url).toBeNull();
  });

  test("a booked stream stays SCHEDULED until its booking timer, and fires SCHEDULED only once", async () => {
    const soon = new Date(Date.now() + 5 * 60_000 + 60).toISOString(); // the default lead is 5 min
    const { actor, emitted, status } = start(soon);
    expect(status()).toBe("SCHEDULED");
    expect([...actor.getSnapshot().tags]).toEqual(["booked"]);
    expect((emitted[0]!.data as any).stream.scheduled_at).toBe(soon);
    actor.send({ type: "MEDIA_OBSERVED", at: "x" });
    expect(status()).toBe("SCHEDULED");
    await Bun.sleep(150);
    expect(status()).toBe("READY_TO_STREAM");
    expect(actor.getSnapshot().hasTag("holdsSlot")).toBe(true);
    expect(emitted).toHaveLength(1);
  });

  test("publisher lifecycle: PUBLISH_STARTED, PUBLISHER_LEFT; the reconnect window ends in finalizing, which asks for live-finalize work", async () => {
    const machine = livestreamMachine.provide({ delays: streamDelays({ leadMs: 0, idleMs: 60_000, reconnectMs: 50 }) });
    const emitted: any[] = [];
    const actor = createActor(machine, { input: streamInput() });
    actor.on("*", (e) => emitted.push(e));
    actor.start();
    actor.send({ type: "PUBLISH_STARTED" });
    expect(actor.getSnapshot().value).toEqual({ ready: "publishing" });
    actor.send({ type: "MEDIA_OBSERVED", at: "a" });
    expect(actor.getSnapshot().value).toEqual({ live: "publishing" });
    expect([...actor.getSnapshot().tags].sort()).toEqual(["acceptsPublish", "hasPublisher", "holdsSlot", "onAir"]);
    actor.send({ type: "PUBLISHER_LEFT" });
    actor.send({ type: "PUBLISH_STARTED" });
    actor.send({ type: "PUBLISHER_LEFT" });
    expect(actor.getSnapshot().value).toEqual({ live: "waiting" });
    await Bun.sleep(120);
    expect(actor.getSnapshot().value).toEqual({ live: "finalizing" });
    expect(actor.getSnapshot().hasTag("acceptsPublish")).toBe(false);
    expect(emitted.filter((e) => e.type === "work")).toEqual([{ type: "work", work: { type: "live-finalize", payload: { streamId: "ls_test", trigger: "pipeline" } } }]);
  });

  test("the owner died (BROADCAST_LOST): LIVE, waiting for the encoder to come back to any process, no event; a take-over publishes on; else the window ends in finalizing", async () => {
    const machine = livestreamMachine.provide({ delays: streamDelays({ leadMs: 0, idleMs: 60_000, reconnectMs: 50 }) });
    const emitted: any[] = [];
    const actor = createActor(machine, { input: streamInput() });
    actor.on("*", (e) => emitted.push(e));
    actor.start();
    actor.send({ type: "PUBLISH_STARTED" });
    actor.send({ type: "MEDIA_OBSERVED", at: "a" });
    const before = emitted.length;
    actor.send({ type: "BROADCAST_LOST" });
    expect(actor.getSnapshot().value).toEqual({ live: "waiting" });
    expect(streamStatus(actor.getSnapshot().value)).toBe("LIVE");
    actor.send({ type: "PUBLISH_STARTED" });
    expect(actor.getSnapshot().value).toEqual({ live: "publishing" });
    expect(emitted.slice(before)).toEqual([]);
    actor.send({ type: "BROADCAST_LOST" });
    // Lost again while waiting: the window already running decides.
    actor.send({ type: "BROADCAST_LOST" });
    expect(actor.getSnapshot().value).toEqual({ live: "waiting" });
    await Bun.sleep(120);
    expect(actor.getSnapshot().value).toEqual({ live: "finalizing" });
    expect(emitted.filter((e) => e.type === "work")).toEqual([{ type: "work", work: { type: "live-finalize", payload: { streamId: "ls_test", trigger: "pipeline" } } }]);
  });

  test("the idle rule: a ready stream nobody publishes to ends (small shape, no duration)", async () => {
    const machine = livestreamMachine.provide({ delays: streamDelays({ leadMs: 0, idleMs: 50, reconnectMs: 50 }) });
    const emitted: DomainEvent[] = [];
    const actor = createActor(machine, { input: streamInput() });
    actor.on("domain", (e) => emitted.push(e));
    actor.start();
    await Bun.sleep(120);
    expect(streamStatus(actor.getSnapshot().value)).toBe("ENDED");
    expect(emitted.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_ENDED"]);
    expect((emitted[1]!.data as any).stream.duration_seconds).toBeNull();
  });

  test("version 1 states migrate: flat ready and live gain their substates", () => {
    expect(migrateStream(1, "ready")).toEqual({ ready: "idle" });
    expect(migrateStream(1, "live")).toEqual({ live: "waiting" });
    expect(migrateStream(1, "ended")).toBe("ended");
  });

  test("pipeline end: STARTED, then ENDED small + recording and RECORDING_READY together", () => {
    const { actor, emitted, status } = start();
    actor.send({ type: "MEDIA_OBSERVED", at: "2026-01-01T00:00:01.000Z" });
    expect(status()).toBe("LIVE");
    expect((emitted[1]!.data as any).stream).toMatchObject({ status: "LIVE", started_at: "2026-01-01T00:00:01.000Z" });
    actor.send({ type: "PIPELINE_ENDED", at: "2026-01-01T00:00:07.000Z", durationSeconds: 6, transcodingInSecs: null, recording });
    expect(status()).toBe("ENDED");
    expect(emitted.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
    for (const e of emitted.slice(2)) {
      const d = e.data as any;
      expect(Object.keys(d.stream).sort()).toEqual(SMALL_KEYS);
      expect(d.stream.status).toBe("ENDED");
      expect(d.recording).toEqual(recording);
    }
  });

  test("pipeline end without a recording: ENDED with recording null and no RECORDING_READY", () => {
    const { actor, emitted } = start();
    actor.send({ type: "PIPELINE_ENDED", at: "t", durationSeconds: 0, transcodingInSecs: null, recording: null });
    expect(emitted.map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_ENDED"]);
    expect((emitted[1]!.data as any).recording).toBeNull();
  });

  test("explicit end: full shape, then RECORDING_READY once the recording is attached", () => {
    const { actor, emitted, status } = start();
    actor.send({ type: "MEDIA_OBSERVED", at: "a" });
    actor.send({ type: "END_REQUESTED", at: "b", durationSeconds: 3 });
    expect(status()).toBe("ENDED");
    const ended = emitted[2]!;
    expect(ended.event).toBe("LIVESTREAM_ENDED");
    expect(Object.keys((ended.data as any).stream).sort()).toEqual(FULL_KEYS);
    expect((ended.data as any).stream.ended_at).toBe("b");
    actor.send({ type: "RECORDING_ATTACHED", recording });
    actor.send({ type: "RECORDING_ATTACHED", recording });
    expect(emitted.map((e) => e.event).slice(3)).toEqual(["LIVESTREAM_RECORDING_READY"]);
    actor.send({ type: "PIPELINE_ENDED", at: "c", durationSeconds: 1, transcodingInSecs: null, recording: null });
    expect(emitted).toHaveLength(4);
  });

  test("the recording's transcode settling: transcoding false, playback url set, no event", () => {
    const { actor, emitted } = start();
    actor.send({ type: "MEDIA_OBSERVED", at: "a" });
    actor.send({ type: "PIPELINE_ENDED", at: "b", durationSeconds: 6, transcodingInSecs: null, recording });
    actor.send({ type: "RECORDING_TRANSCODED", playbackUrl: "http://x/master.m3u8" });
    const ctx = actor.getSnapshot().context;
    expect(ctx.recording).toEqual({ ...recording, transcoding: false });
    expect(ctx.playbackUrl).toBe("http://x/master.m3u8");
    expect(emitted).toHaveLength(4);
    const failed = start();
    failed.actor.send({ type: "PIPELINE_ENDED", at: "b", durationSeconds: 6, transcodingInSecs: null, recording });
    failed.actor.send({ type: "RECORDING_TRANSCODED", playbackUrl: null });
    expect(failed.actor.getSnapshot().context.recording?.transcoding).toBe(false);
    expect(failed.actor.getSnapshot().context.playbackUrl).toBeNull();
  });

  test("failure moves to ERROR; ended streams ignore media", () => {
    const { actor, status } = start();
    actor.send({ type: "FAIL", at: "t", error: { code: "X", message: "y" } });
    expect(status()).toBe("ERROR");
    const b = start();
    b.actor.send({ type: "END_REQUESTED", at: "t", durationSeconds: null });
    b.actor.send({ type: "MEDIA_OBSERVED", at: "u" });
    expect(b.status()).toBe("ENDED");
  });
});
