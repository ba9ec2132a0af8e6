import { assertEvent, assign, emit, enqueueActions, setup } from "xstate";
import type { DomainEvent, MachineEffect, VideoEvent } from "./contracts.ts";
import { videoData, type TranscodePayload, type VideoContext, type VideoStatus } from "./video-payload.ts";

export type { VideoEvent };

/** Stored states are of this version of the machine; `migrateVideo` reads older ones. */
export const VIDEO_MACHINE_VERSION = 3;

/**
 * Version 2 (issue 27: clips) added transitions only; every version 1 state is a version 2 state as it is.
 * Version 3 (issue 29 item 1, early playback) added PLAYABLE and two optional context fields (`playableUrl`,
 * `playableAnnounced`), absent in older states, which read as "not playable yet": a video stored mid-transcode
 * by version 2 announces VIDEO_PLAYABLE at its COMPLETED at the latest.
 */
export const migrateVideo = (_from: number, value: unknown): unknown => value;

/** A clip whose parent was deleted before the clip had cut its own copy (docs/decisions.md, "Clips"). */
export const SOURCE_VIDEO_DELETED = { code: "SOURCE_VIDEO_DELETED", message: "The video this clip is cut from was deleted before the clip was made." } as const;

const STATUS: Record<string, VideoStatus | "DELETED"> = {
  fetching: "TRANSCODING",
  queued: "TRANSCODING",
  processing: "TRANSCODING",
  completed: "COMPLETED",
  failed: "ERROR",
  deleted: "DELETED",
};

export function videoStatus(value: unknown): VideoStatus | "DELETED" {
  return STATUS[String(value)] ?? "ERROR";
}

/** The message that tells a live stream its recording's transcode settled: its manifest, or null when it failed. */
const recordingSettled = (context: VideoContext, streamId: string): MachineEffect => ({
  type: "message",
  message: { kind: "livestream", actorId: streamId, event: { type: "RECORDING_TRANSCODED", playbackUrl: context.outcome?.url ?? null } },
});

const domain = (event: string, status: VideoStatus) => ({ type: "emitDomain", params: { event, status } }) as const;

/** A video can fail or be deleted the same way whether its job was queued or running. */
const FAILING = {
  TRANSCODING_FAILED: { target: "failed", actions: ["recordFailure", domain("VIDEO_TRANSCODING_FAILED", "ERROR")] },
  DELETE: "deleted",
} as const;

/**
 * The source went missing: a URL is fetched again; a clip (a video derived from another) whose parent's original is
 * gone fails for good with SOURCE_VIDEO_DELETED (nothing to fetch it from; a retry fails the same way).
 */
const SOURCE_GONE = [
  { guard: "hasUrl", target: "fetching" },
  { guard: "isDerived", target: "failed", actions: ["recordSourceGone", domain("VIDEO_TRANSCODING_FAILED", "ERROR")] },
] as const;

/** A fresh attempt: what the last one recorded is cleared, the pipeline starts from `source` (null: fetched first). */
const retryFrom = (source: TranscodePayload | null) => ({ error: null, outcome: null, progress: 0, transcoderId: null, pipeline: { source }, playableUrl: null, playableAnnounced: false });

/**
 * A video's life: registered → fetching (a URL source: entering it queues the
 * `fetch-source` work) → queued (entering it queues the `transcode` work from
 * the source: an upload, a recording's file, or what SOURCE_READY reported) →
 * the pipeline accepts the job (processing) → COMPLETED or ERROR; all but the
 * last two are status TRANSCODING. Pure: handlers report facts with events and
 * the runtime writes what it emits (domain events, work) in the same
 * transaction. A repeated TRANSCODING_STARTED (a job reclaimed after a crash)
 * is absorbed, so each event fires once per transition. A context without
 * `pipeline` (stored before the machine queued its own work) queues nothing.
 * A clip (`derivedFrom`: a video derived from another, issue 27) is registered
 * straight into `queued` with a trimmed source (its parent's kept original or
 * a live stream's recording so far); its SOURCE_MISSING (the parent deleted
 * before the clip cut its own copy) fails it with SOURCE_VIDEO_DELETED.
 */
/** The video's state tags (README of src/actors): who asks each. */
export type VideoTag = "transcoding" | "settled";

export const videoMachine = setup({
  types: {
    context: {} as VideoContext,
    input: {} as VideoContext,
    events: {} as VideoEvent,
    emitted: {} as MachineEffect,
    tags: {} as VideoTag,
  },
  actions: {
    recordFailure: assign(({ event }) => {
      assertEvent(event, "TRANSCODING_FAILED");
      // A failed attempt's partial playlists are no playable URL.
      return { error: event.error, playableUrl: null };
    }),
    /** Issue 29 item 1: playable while transcoding; VIDEO_PLAYABLE once per attempt (a repeat after a crash only sets the URL again). */
    recordPlayable: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "PLAYABLE");
      enqueue.assign({ playableUrl: event.url, playableAnnounced: true });
      if (!context.playableAnnounced) enqueue.emit({ type: "domain", event: "VIDEO_PLAYABLE", data: videoData({ ...context, playableUrl: event.url }, "TRANSCODING") });
    }),
    /** COMPLETED without an earlier PLAYABLE (a DRM job, a slow ladder, an older state): VIDEO_PLAYABLE first, still once. */
    announcePlayableAtCompletion: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "TRANSCODING_COMPLETED");
      if (context.playableAnnounced) return;
      enqueue.assign({ playableAnnounced: true });
      enqueue.emit({ type: "domain", event: "VIDEO_PLAYABLE", data: videoData({ ...context, playableUrl: event.outcome.url }, "TRANSCODING") });
    }),
    recordSourceGone: assign(() => ({ error: { ...SOURCE_VIDEO_DELETED } })),
    emitDomain: emit(
      ({ context }, params: { event: string; status: VideoStatus }): DomainEvent => ({
        type: "domain",
        event: params.event,
        data: videoData(context, params.status),
      }),
    ),
    /** "Recording playable": a durable message to the live stream this video records (or that asked), sent when the transcode settles. */
    tellStream: emit(({ context, event }): MachineEffect => {
      assertEvent(event, "STREAM_ASKS_STATE");
      return recordingSettled(context, event.streamId);
    }),
    announceUpload: enqueueActions(({ context, enqueue }) => {
      // Recordings are announced by LIVESTREAM_RECORDING_READY instead (spec 6.3).
      if (context.kind === "UPLOAD") enqueue.emit({ type: "domain", event: "VIDEO_UPLOADED", data: videoData(context, "TRANSCODING") });
    }),
    queueFetch: emit((): MachineEffect => ({ type: "work", work: { type: "fetch-source", payload: {} } })),
    queueTranscode: enqueueActions(({ context, enqueue }) => {
      const source = context.pipeline?.source;
      if (source) enqueue.emit({ type: "work", work: { type: "transcode", payload: source } });
    }),
    recordSource: assign(({ event }) => {
      assertEvent(event, "SOURCE_READY");
      return { pipeline: { source: event.source } };
    }),
    tellOwnStream: enqueueActions(({ context, enqueue }) => {
      if (context.stream) enqueue.emit(recordingSettled(context, context.stream.id));
    }),
    /** A deleted recording tells its stream, which drops `playback_url` and `recording` (issue 23: they were left as dead links). */
    tellOwnStreamDeleted: enqueueActions(({ context, enqueue }) => {
      if (context.stream) enqueue.emit({ type: "message", message: { kind: "livestream", actorId: context.stream.id, event: { type: "RECORDING_DELETED", assetId: context.id } } });
    }),
  },
  guards: {
    /** A URL registered by this machine's pipeline: its source is fetched first. */
    mustFetch: ({ context }) => context.pipeline !== undefined && !context.pipeline.source,
    hasUrl: ({ context }) => !!context.sourceUrl,
    /** A clip: cut from another video or a live stream (its source is that one's, trimmed). */
    isDerived: ({ context }) => !!context.derivedFrom,
  },
}).createMachine({
  id: "video",
  context: ({ input }) => input,
  initial: "registered",
  states: {
    registered: {
      always: [
        { guard: "mustFetch", target: "fetching", actions: "announceUpload" },
        { target: "queued", actions: "announceUpload" },
      ],
    },
    fetching: {
      tags: ["transcoding"],
      entry: "queueFetch",
      on: {
        SOURCE_READY: { target: "queued", actions: "recordSource" },
        ...FAILING,
      },
    },
    queued: {
      tags: ["transcoding"],
      entry: "queueTranscode",
      on: {
        // A fetch queued before the machine had a fetching state reports here: its transcode is queued as from fetching.
        SOURCE_READY: { target: "queued", reenter: true, actions: "recordSource" },
        SOURCE_MISSING: SOURCE_GONE,
        TRANSCODING_STARTED: {
          target: "processing",
          actions: [assign({ transcoderId: ({ event }) => event.transcoderId, progress: 0 }), domain("VIDEO_TRANSCODING_STARTED", "TRANSCODING")],
        },
        ...FAILING,
      },
    },
    processing: {
      tags: ["transcoding"],
      on: {
        PROGRESS: {
          guard: ({ context, event }) => event.percent > context.progress,
          actions: assign({ progress: ({ event }) => Math.min(100, Math.max(0, Math.floor(event.percent))) }),
        },
        // A run repeated after a crash whose fetched copy (or a clip's parent) went missing meanwhile.
        SOURCE_MISSING: SOURCE_GONE,
        // A job reclaimed after a crash starts its outputs again from scratch: not playable until it says so again (no event).
        TRANSCODING_STARTED: { actions: assign({ playableUrl: null }) },
        PLAYABLE: { actions: "recordPlayable" },
        TRANSCODING_COMPLETED: {
          target: "completed",
          actions: ["announcePlayableAtCompletion", assign({ outcome: ({ event }) => event.outcome, progress: 100, playableUrl: null }), domain("VIDEO_TRANSCODING_COMPLETED", "COMPLETED")],
        },
        ...FAILING,
      },
    },
    completed: {
      tags: ["settled"],
      entry: "tellOwnStream",
      on: { STREAM_ASKS_STATE: { actions: "tellStream" }, DELETE: "deleted" },
    },
    failed: {
      tags: ["settled"],
      entry: "tellOwnStream",
      on: {
        STREAM_ASKS_STATE: { actions: "tellStream" },
        // No VIDEO_UPLOADED again (the asset was registered once); the new attempt's STARTED and COMPLETED or FAILED fire.
        RETRY: [
          { guard: ({ event }) => !!event.source, target: "queued", actions: assign(({ event }) => retryFrom(event.source ?? null)) },
          { target: "fetching", actions: assign(() => retryFrom(null)) },
        ],
        DELETE: "deleted",
      },
    },
    deleted: { type: "final", entry: "tellOwnStreamDeleted" },
  },
});
