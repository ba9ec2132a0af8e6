import { assertEvent, assign, emit, enqueueActions, setup } from "xstate";
import type { DomainEvent } from "./domain-event.ts";
import type { MachineEffect } from "./effects.ts";
import { videoData, type TranscodeOutcome, type VideoContext, type VideoStatus } from "./video-payload.ts";

export type VideoEvent =
  | { type: "TRANSCODING_STARTED"; transcoderId: string }
  | { type: "PROGRESS"; percent: number }
  | { type: "TRANSCODING_COMPLETED"; outcome: TranscodeOutcome }
  | { type: "TRANSCODING_FAILED"; error: { code: string; message: string } }
  /** A live stream holding this video as its recording asks whether the transcode has settled (answered by RECORDING_TRANSCODED). */
  | { type: "STREAM_ASKS_STATE"; streamId: string }
  /** A failed video is tried again (`POST /videos/{id}/retry/`): back to queued, its error cleared; the caller queues its first stage. */
  | { type: "RETRY" }
  | { type: "DELETE" };

/** Stored states are of this version of the machine. */
export const VIDEO_MACHINE_VERSION = 1;

const STATUS: Record<string, VideoStatus | "DELETED"> = {
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
 * A video's life: registered (queued, status TRANSCODING) → the pipeline accepts
 * the job (processing) → COMPLETED or ERROR. Pure: the pipeline drives it with
 * events and the runtime turns emitted domain events into outbox rows.
 * A repeated TRANSCODING_STARTED (a job reclaimed after a crash) is absorbed,
 * so each event fires once per transition.
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
      return { error: event.error };
    }),
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
    tellOwnStream: enqueueActions(({ context, enqueue }) => {
      if (context.stream) enqueue.emit(recordingSettled(context, context.stream.id));
    }),
    /** A deleted recording tells its stream, which drops `playback_url` and `recording` (issue 23: they were left as dead links). */
    tellOwnStreamDeleted: enqueueActions(({ context, enqueue }) => {
      if (context.stream) enqueue.emit({ type: "message", message: { kind: "livestream", actorId: context.stream.id, event: { type: "RECORDING_DELETED", assetId: context.id } } });
    }),
  },
  guards: {
    isUpload: ({ context }) => context.kind === "UPLOAD",
  },
}).createMachine({
  id: "video",
  context: ({ input }) => input,
  initial: "registered",
  states: {
    registered: {
      always: [
        { guard: "isUpload", target: "queued", actions: domain("VIDEO_UPLOADED", "TRANSCODING") },
        // Recordings are announced by LIVESTREAM_RECORDING_READY instead (spec 6.3).
        { target: "queued" },
      ],
    },
    queued: {
      tags: ["transcoding"],
      on: {
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
        TRANSCODING_COMPLETED: {
          target: "completed",
          actions: [assign({ outcome: ({ event }) => event.outcome, progress: 100 }), domain("VIDEO_TRANSCODING_COMPLETED", "COMPLETED")],
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
        RETRY: { target: "queued", actions: assign({ error: null, outcome: null, progress: 0, transcoderId: null }) },
        DELETE: "deleted",
      },
    },
    deleted: { type: "final", entry: "tellOwnStreamDeleted" },
  },
});
