import { describe, expect, test } from "bun:test";
import { createActor, initialTransition, transition } from "xstate";
import type { DomainEvent, MachineEffect } from "./contracts.ts";
import { videoInput } from "./test-contexts.ts";
import { migrateVideo, SOURCE_VIDEO_DELETED, VIDEO_MACHINE_VERSION, videoMachine, videoStatus } from "./video-machine.ts";
import type { TranscodeOutcome } from "./video-payload.ts";

function start(kind: "UPLOAD" | "LIVESTREAM_RECORDING" = "UPLOAD") {
  const emitted: DomainEvent[] = [];
  const actor = createActor(videoMachine, { input: videoInput({ kind, stream: kind === "UPLOAD" ? null : { id: "ls_1", stream_key: "k" } }) });
  actor.on("domain", (e) => emitted.push(e));
  actor.start();
  return { actor, emitted };
}

const outcome: TranscodeOutcome = {
  url: "http://x/master.m3u8",
  durationSeconds: 3,
  sizeBytes: 1234,
  renditions: [
    { quality: "360p", url: "http://x/360p.m3u8", width: 640, height: 360, download_url: null, download_size_bytes: null, download_password: null },
    { quality: "720p", url: "http://x/720p.m3u8", width: 1280, height: 720, download_url: "http://x/720p.mkv", download_size_bytes: "999", download_password: null },
  ],
  storage: { total_bytes: "2233", hls_bytes: "1000", original_bytes: "1234" },
};

describe("video machine", () => {
  test("an upload is announced as TRANSCODING, then started, completed with the whole payload", () => {
    const { actor, emitted } = start();
    expect(videoStatus(actor.getSnapshot().value)).toBe("TRANSCODING");
    expect(emitted.map((e) => e.event)).toEqual(["VIDEO_UPLOADED"]);
    expect((emitted[0]!.data as any).video.status).toBe("TRANSCODING");

    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "wasm-1" });
    expect((emitted[1]!.data as any).video.transcoder_id).toBe("wasm-1");
    actor.send({ type: "PROGRESS", percent: 40 });
    actor.send({ type: "PROGRESS", percent: 20 });
    expect(actor.getSnapshot().context.progress).toBe(40);

    actor.send({ type: "TRANSCODING_COMPLETED", outcome });
    expect(videoStatus(actor.getSnapshot().value)).toBe("COMPLETED");
    // Never announced playable before: VIDEO_PLAYABLE (once) right before COMPLETED.
    expect(emitted.map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
    const done = emitted[3]!;
    expect(done.event).toBe("VIDEO_TRANSCODING_COMPLETED");
    const data = done.data as any;
    expect(data.video).toMatchObject({
      status: "COMPLETED",
      url: outcome.url,
      duration_seconds: 3,
      size_bytes: "1234",
      download_url: "http://x/720p.mkv",
      download_quality: "720p",
      download_size_bytes: "999",
    });
    expect(data.renditions).toHaveLength(2);
    expect(data.stream).toBeNull();
    expect(data.error).toBeNull();
  });

  test("a reclaimed job's second TRANSCODING_STARTED fires nothing", () => {
    const { actor, emitted } = start();
    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "a" });
    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "b" });
    expect(emitted.map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED"]);
  });

  test("failure from the queue or mid-transcode carries the error and status ERROR", () => {
    for (const afterStart of [false, true]) {
      const { actor, emitted } = start();
      if (afterStart) actor.send({ type: "TRANSCODING_STARTED", transcoderId: "a" });
      actor.send({ type: "TRANSCODING_FAILED", error: { code: "SOURCE_NOT_FOUND", message: "404" } });
      const last = emitted.at(-1)!;
      expect(last.event).toBe("VIDEO_TRANSCODING_FAILED");
      expect((last.data as any).video.status).toBe("ERROR");
      expect((last.data as any).error).toEqual({ code: "SOURCE_NOT_FOUND", message: "404" });
      expect(videoStatus(actor.getSnapshot().value)).toBe("ERROR");
    }
  });

  test("a recording is not announced as uploaded and carries its stream", () => {
    const { actor, emitted } = start("LIVESTREAM_RECORDING");
    expect(emitted).toEqual([]);
    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "a" });
    actor.send({ type: "TRANSCODING_COMPLETED", outcome });
    const data = emitted.at(-1)!.data as any;
    expect(data.video.kind).toBe("LIVESTREAM_RECORDING");
    expect(data.stream).toEqual({ id: "ls_1", stream_key: "k" });
  });

  test("completed videos ignore late failures; any state can be deleted", () => {
    const { actor, emitted } = start();
    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "a" });
    actor.send({ type: "TRANSCODING_COMPLETED", outcome });
    actor.send({ type: "TRANSCODING_FAILED", error: { code: "X", message: "late" } });
    expect(videoStatus(actor.getSnapshot().value)).toBe("COMPLETED");
    expect(emitted.map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
    actor.send({ type: "DELETE" });
    expect(videoStatus(actor.getSnapshot().value)).toBe("DELETED");
  });
});

/** The work a step emitted, as the actor runtime reads it (src/actors/effects.ts): XState's pure `transition()` actions. */
function workOf(actions: readonly { type: string; params?: unknown }[]) {
  return actions
    .filter((a) => a.type === "xstate.emit")
    .map((a) => (a.params as { event: MachineEffect }).event)
    .filter((e) => e.type === "work")
    .map((e) => (e as { work: unknown }).work);
}

describe("video machine: its own pipeline through transition()", () => {
  const fetched = { sourcePath: "/data/work/vid_test/source.mp4", sourceKey: "work/vid_test/source.mp4", fetched: true };

  test("a URL is fetched, then SOURCE_READY queues its transcode from the fetched copy", () => {
    const [registered, first] = initialTransition(videoMachine, videoInput({ pipeline: { source: null } }));
    expect(registered.value).toBe("fetching");
    expect(videoStatus(registered.value)).toBe("TRANSCODING");
    expect(registered.hasTag("transcoding")).toBe(true);
    expect(workOf(first)).toEqual([{ type: "fetch-source", payload: {} }]);

    const [ready, second] = transition(videoMachine, registered, { type: "SOURCE_READY", source: fetched });
    expect(ready.value).toBe("queued");
    expect(workOf(second)).toEqual([{ type: "transcode", payload: fetched }]);

    const [started, third] = transition(videoMachine, ready, { type: "TRANSCODING_STARTED", transcoderId: "native-1" });
    expect(started.value).toBe("processing");
    expect(workOf(third)).toEqual([]);
    const [done] = transition(videoMachine, started, { type: "TRANSCODING_COMPLETED", outcome });
    expect(videoStatus(done.value)).toBe("COMPLETED");
  });

  test("an upload or a recording is transcoded at once from its file; nothing is fetched", () => {
    const [upload, a] = initialTransition(videoMachine, videoInput({ pipeline: { source: { uploadId: "upl_1" } } }));
    expect(upload.value).toBe("queued");
    expect(workOf(a)).toEqual([{ type: "transcode", payload: { uploadId: "upl_1" } }]);
    const [recording, b] = initialTransition(videoMachine, videoInput({ kind: "LIVESTREAM_RECORDING", sourceUrl: null, pipeline: { source: { sourcePath: "/r.flv" } } }));
    expect(workOf(b)).toEqual([{ type: "transcode", payload: { sourcePath: "/r.flv" } }]);
    expect(recording.value).toBe("queued");
  });

  test("a fetched copy gone missing is fetched again; a video without a URL cannot be", () => {
    const [fetching] = initialTransition(videoMachine, videoInput({ pipeline: { source: null } }));
    const [queued] = transition(videoMachine, fetching, { type: "SOURCE_READY", source: fetched });
    const [again, actions] = transition(videoMachine, queued, { type: "SOURCE_MISSING" });
    expect(again.value).toBe("fetching");
    expect(workOf(actions)).toEqual([{ type: "fetch-source", payload: {} }]);
    const [recording] = initialTransition(videoMachine, videoInput({ sourceUrl: null, pipeline: { source: { sourcePath: "/r.flv" } } }));
    expect(transition(videoMachine, recording, { type: "SOURCE_MISSING" })[0].value).toBe("queued");
  });

  test("RETRY starts the pipeline again: fetched without a source, transcoded from the one given", () => {
    const [fetching] = initialTransition(videoMachine, videoInput({ pipeline: { source: null } }));
    const [failed] = transition(videoMachine, fetching, { type: "TRANSCODING_FAILED", error: { code: "SOURCE_NOT_FOUND", message: "404" } });
    const [refetch, a] = transition(videoMachine, failed, { type: "RETRY" });
    expect(refetch.value).toBe("fetching");
    expect(refetch.context.error).toBeNull();
    expect(workOf(a)).toEqual([{ type: "fetch-source", payload: {} }]);
    const [requeued, b] = transition(videoMachine, failed, { type: "RETRY", source: { uploadId: "upl_1" } });
    expect(requeued.value).toBe("queued");
    expect(workOf(b)).toEqual([{ type: "transcode", payload: { uploadId: "upl_1" } }]);
  });

  test("a video stored before the machine queued its work queues nothing until a fetch queued for it reports", () => {
    const [legacy, a] = initialTransition(videoMachine, videoInput());
    expect(legacy.value).toBe("queued");
    expect(workOf(a)).toEqual([]);
    const [ready, b] = transition(videoMachine, legacy, { type: "SOURCE_READY", source: fetched });
    expect(ready.value).toBe("queued");
    expect(workOf(b)).toEqual([{ type: "transcode", payload: fetched }]);
  });
});

/** The domain events a step emitted (the outbox rows the runtime writes). */
const domainOf = (actions: readonly { type: string; params?: unknown }[]) =>
  actions
    .filter((a) => a.type === "xstate.emit")
    .map((a) => (a.params as { event: MachineEffect }).event)
    .filter((e): e is DomainEvent => e.type === "domain");

describe("video machine: a video derived from another (issue 27, clips) through transition()", () => {
  const trimmed = { parentVideoId: "vid_parent", trim: { start: 1.2, end: 2.5 } };
  const clip = () =>
    initialTransition(videoMachine, videoInput({ sourceUrl: null, derivedFrom: { videoId: "vid_parent", streamId: null, startTime: 1.2, endTime: 2.5 }, pipeline: { source: trimmed } }));

  test("a clip is announced with its parent and queued at once with its trimmed source; it completes like any video", () => {
    const [queued, first] = clip();
    expect(queued.value).toBe("queued");
    expect(workOf(first)).toEqual([{ type: "transcode", payload: trimmed }]);
    const [uploaded] = domainOf(first);
    expect(uploaded!.event).toBe("VIDEO_UPLOADED");
    expect((uploaded!.data as any).video).toMatchObject({ status: "TRANSCODING", source_video_id: "vid_parent", source_stream_id: null });
    const [started] = transition(videoMachine, queued, { type: "TRANSCODING_STARTED", transcoderId: "native-1" });
    const [done, last] = transition(videoMachine, started, { type: "TRANSCODING_COMPLETED", outcome });
    expect(videoStatus(done.value)).toBe("COMPLETED");
    expect((domainOf(last)[0]!.data as any).video.source_video_id).toBe("vid_parent");
  });

  test("its parent gone (SOURCE_MISSING, queued or running) fails it with SOURCE_VIDEO_DELETED; a retry tries the same span again", () => {
    for (const running of [false, true]) {
      let [state] = clip();
      if (running) [state] = transition(videoMachine, state, { type: "TRANSCODING_STARTED", transcoderId: "a" });
      const [failed, actions] = transition(videoMachine, state, { type: "SOURCE_MISSING" });
      expect(videoStatus(failed.value)).toBe("ERROR");
      expect(failed.context.error).toEqual({ ...SOURCE_VIDEO_DELETED });
      const [event] = domainOf(actions);
      expect(event!.event).toBe("VIDEO_TRANSCODING_FAILED");
      expect((event!.data as any).error.code).toBe("SOURCE_VIDEO_DELETED");
      expect(workOf(actions)).toEqual([]);
      const [again, retried] = transition(videoMachine, failed, { type: "RETRY", source: trimmed });
      expect(again.value).toBe("queued");
      expect(workOf(retried)).toEqual([{ type: "transcode", payload: trimmed }]);
    }
  });

  test("a version 1 or 2 state reads as it is in version 3", () => {
    expect(VIDEO_MACHINE_VERSION).toBe(3);
    for (const from of [1, 2]) for (const v of ["fetching", "queued", "processing", "completed", "failed", "deleted"]) expect(migrateVideo(from, v)).toBe(v);
  });
});

describe("video machine: early playback (issue 29 item 1)", () => {
  const MASTER = "http://x/media/t/hls/master.m3u8";
  const started = () => {
    const { actor, emitted } = start();
    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "native-1" });
    return { actor, emitted };
  };

  test("PLAYABLE while transcoding: VIDEO_PLAYABLE once with the master's url, status still TRANSCODING; COMPLETED keeps its payload", () => {
    const { actor, emitted } = started();
    actor.send({ type: "PLAYABLE", url: MASTER });
    actor.send({ type: "PLAYABLE", url: MASTER });
    actor.send({ type: "PROGRESS", percent: 60 });
    expect(videoStatus(actor.getSnapshot().value)).toBe("TRANSCODING");
    expect(actor.getSnapshot().context.playableUrl).toBe(MASTER);
    const playable = emitted.filter((e) => e.event === "VIDEO_PLAYABLE");
    expect(playable).toHaveLength(1);
    expect((playable[0]!.data as any).video).toMatchObject({ status: "TRANSCODING", url: MASTER });
    actor.send({ type: "TRANSCODING_COMPLETED", outcome });
    expect(emitted.map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
    expect((emitted[3]!.data as any).video).toMatchObject({ status: "COMPLETED", url: outcome.url });
    expect(actor.getSnapshot().context.playableUrl).toBeNull();
  });

  test("a job reclaimed after a crash is not playable until it says so again, and VIDEO_PLAYABLE does not fire twice", () => {
    const { actor, emitted } = started();
    actor.send({ type: "PLAYABLE", url: MASTER });
    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "native-2" });
    expect(actor.getSnapshot().context.playableUrl).toBeNull();
    actor.send({ type: "PLAYABLE", url: MASTER });
    expect(actor.getSnapshot().context.playableUrl).toBe(MASTER);
    actor.send({ type: "TRANSCODING_COMPLETED", outcome });
    expect(emitted.filter((e) => e.event === "VIDEO_PLAYABLE")).toHaveLength(1);
  });

  test("a failed attempt drops the URL; a retry announces its own VIDEO_PLAYABLE", () => {
    const { actor, emitted } = started();
    actor.send({ type: "PLAYABLE", url: MASTER });
    actor.send({ type: "TRANSCODING_FAILED", error: { code: "TRANSCODE_FAILED", message: "x" } });
    expect((emitted.at(-1)!.data as any).video.url).toBeNull();
    actor.send({ type: "RETRY", source: { uploadId: "upl_1" } });
    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "native-3" });
    actor.send({ type: "PLAYABLE", url: MASTER });
    expect(emitted.filter((e) => e.event === "VIDEO_PLAYABLE")).toHaveLength(2);
  });

  test("PLAYABLE is ignored before the job started and after it settled", () => {
    const { actor, emitted } = start();
    actor.send({ type: "PLAYABLE", url: MASTER });
    expect(actor.getSnapshot().context.playableUrl).toBeUndefined();
    actor.send({ type: "TRANSCODING_STARTED", transcoderId: "a" });
    actor.send({ type: "TRANSCODING_COMPLETED", outcome });
    actor.send({ type: "PLAYABLE", url: MASTER });
    expect(emitted.filter((e) => e.event === "VIDEO_PLAYABLE")).toHaveLength(1);
  });
});
