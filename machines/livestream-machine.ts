import { assertEvent, assign, emit, enqueueActions, setup } from "xstate";
import type { DomainEvent, MachineEffect, StreamEvent } from "./contracts.ts";
import { fullStream, smallStream, type StreamContext, type StreamStatus } from "./livestream-payload.ts";

export type { StreamEvent };

/** Stored states are of this version of the machine; `migrateStream` upgrades older ones. */
export const LIVESTREAM_MACHINE_VERSION = 2;

const STATUS: Record<string, StreamStatus | "DELETED"> = {
  scheduled: "SCHEDULED",
  ready: "READY_TO_STREAM",
  live: "LIVE",
  ended: "ENDED",
  recorded: "ENDED",
  error: "ERROR",
  deleted: "DELETED",
};

/** The public status of a state value (`"ended"`, or `{ live: "waiting" }`: its top-level state). */
export function streamStatus(value: unknown): StreamStatus | "DELETED" {
  const top = typeof value === "object" && value !== null ? Object.keys(value)[0] : String(value);
  return STATUS[top ?? ""] ?? "ERROR";
}

/** Version 1 stored flat states; `ready` and `live` gained substates (who publishes, and the reconnect window). */
export function migrateStream(from: number, value: unknown): unknown {
  if (from === 1 && value === "ready") return { ready: "idle" };
  if (from === 1 && value === "live") return { live: "waiting" };
  return value;
}

/** How long the machine's timers wait; the service provides them from its configuration. */
export interface StreamTimings {
  /** LIVE_SCHEDULE_LEAD_MS: a booked stream is ready this long before `scheduled_at`. */
  leadMs: number;
  /** LIVE_IDLE_TIMEOUT_MS: a ready stream nobody publishes to ends this long after it became ready (or its booking). */
  idleMs: number;
  /** LIVE_RECONNECT_MS: how long a publisher that left may come back before the broadcast is finalized. */
  reconnectMs: number;
}

/** The machine's delays from its timings (time is read when a timer is armed: the delay is stored as a due time). */
export function streamDelays(t: StreamTimings) {
  return {
    bookingLead: ({ context }: { context: StreamContext }) => Math.max(0, Date.parse(context.scheduledAt ?? "") - t.leadMs - Date.now() || 0),
    idleTimeout: ({ context }: { context: StreamContext }) => {
      const booked = context.scheduledAt ? Date.parse(context.scheduledAt) : 0;
      return Math.max(0, Math.max(booked, Date.now()) + t.idleMs - Date.now());
    },
    reconnectWindow: () => t.reconnectMs,
  };
}

const full = (event: string, status: StreamStatus) => ({ type: "emitFull", params: { event, status } }) as const;
const small = (event: string) => ({ type: "emitSmall", params: { event } }) as const;
const finalize = (trigger: "pipeline" | "explicit") => ({ type: "finalize", params: { trigger } }) as const;

/** How a stream that is ready or on air can end: the same from both states. */
const ENDINGS = {
  PIPELINE_ENDED: { target: "#livestream.ended", actions: ["recordPipelineEnd", small("LIVESTREAM_ENDED")] },
  END_REQUESTED: { target: "#livestream.ended", actions: ["recordExplicitEnd", full("LIVESTREAM_ENDED", "ENDED"), finalize("explicit")] },
  FAIL: { target: "#livestream.error", actions: "recordFailure" },
  DELETE: "#livestream.deleted",
} as const;

/**
 * Who publishes, inside `ready` and `live`: nobody yet (idle, ready only),
 * a publisher (publishing), or one that left and may come back (waiting,
 * for the reconnect window); then the broadcast is finalized (finalizing:
 * durable `live-finalize` work closes the files, registers the recording
 * and answers PIPELINE_ENDED). A broadcast whose owning process died
 * (BROADCAST_LOST: its lease lapsed) is a publisher that left: its encoder
 * may come back to any process within the reconnect window, which takes the
 * broadcast over (issue 26); lost while already waiting, the window running
 * goes on.
 */
const publishing = {
  tags: ["acceptsPublish", "hasPublisher"],
  on: { PUBLISHER_LEFT: "waiting", BROADCAST_LOST: "waiting" },
} as const;
const waiting = {
  tags: ["acceptsPublish", "hasPublisher"],
  after: { reconnectWindow: "finalizing" },
  on: { PUBLISH_STARTED: "publishing" },
} as const;
const finalizing = { entry: finalize("pipeline") } as const;

/**
 * A live stream: created (LIVESTREAM_SCHEDULED) → SCHEDULED until its booking
 * is near (a timer), or READY_TO_STREAM at once → LIVE when media is observed
 * → ENDED by the pipeline (small shape + recording, then RECORDING_READY), by
 * the idle rule (nobody published before LIVE_IDLE_TIMEOUT_MS), or by an
 * explicit end (full shape; RECORDING_READY follows when the recording is
 * attached). Tags answer the services' questions: `holdsSlot` (counts
 * against LIVE_SLOTS), `onAir`, `acceptsPublish`, `hasPublisher`, `booked`,
 * `settled`.
 */
/** The stream's state tags (above; README of src/actors). */
export type StreamTag = "booked" | "holdsSlot" | "acceptsPublish" | "hasPublisher" | "onAir" | "settled";

export const livestreamMachine = setup({
  types: {
    context: {} as StreamContext,
    input: {} as StreamContext,
    events: {} as StreamEvent,
    emitted: {} as MachineEffect,
    tags: {} as StreamTag,
  },
  delays: streamDelays({ leadMs: 5 * 60_000, idleMs: 60 * 60_000, reconnectMs: 10_000 }),
  actions: {
    recordPipelineEnd: assign(({ event }) => {
      assertEvent(event, "PIPELINE_ENDED");
      return { endedAt: event.at, durationSeconds: event.durationSeconds, transcodingInSecs: event.transcodingInSecs, recording: event.recording };
    }),
    recordIdleEnd: assign(() => ({ endedAt: new Date().toISOString(), durationSeconds: null, transcodingInSecs: null, recording: null })),
    recordExplicitEnd: assign(({ event }) => {
      assertEvent(event, "END_REQUESTED");
      return { endedAt: event.at, durationSeconds: event.durationSeconds };
    }),
    recordLateRecording: assign(({ context, event }) => {
      assertEvent(event, ["PIPELINE_ENDED", "RECORDING_ATTACHED"]);
      return { recording: event.recording ?? context.recording };
    }),
    recordTranscoded: assign(({ context, event }) => {
      assertEvent(event, "RECORDING_TRANSCODED");
      return { playbackUrl: event.playbackUrl, recording: context.recording ? { ...context.recording, transcoding: false } : null };
    }),
    recordDeleted: assign(({ context, event }) => {
      assertEvent(event, "RECORDING_DELETED");
      return context.recording?.asset_id === event.assetId ? { playbackUrl: null, recording: null } : {};
    }),
    recordStart: assign(({ event }) => {
      assertEvent(event, "MEDIA_OBSERVED");
      return { startedAt: event.at };
    }),
    recordFailure: assign(({ event }) => {
      assertEvent(event, "FAIL");
      return { error: event.error, endedAt: event.at };
    }),
    emitFull: emit(
      ({ context }, params: { event: string; status: StreamStatus }): DomainEvent => ({
        type: "domain",
        event: params.event,
        data: { stream: fullStream(context, params.status) },
      }),
    ),
    emitSmall: emit(
      ({ context }, params: { event: string }): DomainEvent => ({
        type: "domain",
        event: params.event,
        data: { stream: smallStream(context), recording: context.recording },
      }),
    ),
    finalize: emit(
      ({ context }, params: { trigger: "pipeline" | "explicit" }): MachineEffect => ({
        type: "work",
        work: { type: "live-finalize", payload: { streamId: context.id, trigger: params.trigger } },
      }),
    ),
    // The recording may have settled before the stream heard of it (a crash between the two): ask it.
    askIfTranscoding: enqueueActions(({ context, enqueue }) => {
      const rec = context.recording;
      if (rec?.transcoding) enqueue.emit({ type: "message", message: { kind: "video", actorId: rec.asset_id, event: { type: "STREAM_ASKS_STATE", streamId: context.id } } });
    }),
  },
  guards: {
    booked: ({ context }) => context.scheduledAt !== null,
    hasRecording: ({ context }) => context.recording !== null,
  },
}).createMachine({
  id: "livestream",
  context: ({ input }) => input,
  initial: "created",
  states: {
    created: {
      always: [
        { guard: "booked", target: "scheduled", actions: full("LIVESTREAM_SCHEDULED", "SCHEDULED") },
        { target: "ready", actions: full("LIVESTREAM_SCHEDULED", "READY_TO_STREAM") },
      ],
    },
    scheduled: {
      tags: ["booked"],
      after: { bookingLead: "ready" },
      on: {
        END_REQUESTED: { target: "ended", actions: ["recordExplicitEnd", full("LIVESTREAM_ENDED", "ENDED")] },
        FAIL: { target: "error", actions: "recordFailure" },
        UPGRADED: { target: "scheduled", reenter: true },
        DELETE: "deleted",
      },
    },
    ready: {
      tags: ["holdsSlot"],
      initial: "idle",
      states: {
        idle: {
          tags: ["acceptsPublish"],
          after: { idleTimeout: { target: "#livestream.ended", actions: ["recordIdleEnd", small("LIVESTREAM_ENDED")] } },
          on: { PUBLISH_STARTED: "publishing", MEDIA_OBSERVED: { target: "#livestream.live.publishing", actions: ["recordStart", full("LIVESTREAM_STARTED", "LIVE")] } },
        },
        publishing: { ...publishing, on: { ...publishing.on, MEDIA_OBSERVED: { target: "#livestream.live.publishing", actions: ["recordStart", full("LIVESTREAM_STARTED", "LIVE")] } } },
        waiting: { ...waiting, on: { ...waiting.on, MEDIA_OBSERVED: { target: "#livestream.live.waiting", actions: ["recordStart", full("LIVESTREAM_STARTED", "LIVE")] } } },
        finalizing,
      },
      on: { ...ENDINGS, UPGRADED: { target: ".idle", reenter: true } },
    },
    live: {
      tags: ["holdsSlot", "onAir"],
      initial: "publishing",
      states: { publishing, waiting, finalizing },
      on: { ...ENDINGS, UPGRADED: { target: ".waiting", reenter: true } },
    },
    ended: {
      tags: ["settled"],
      // RECORDING_READY always accompanies the end when a recording exists.
      always: { guard: "hasRecording", target: "recorded", actions: small("LIVESTREAM_RECORDING_READY") },
      on: {
        // An explicit end's finalization answers with the recording it registered.
        PIPELINE_ENDED: { actions: "recordLateRecording" },
        RECORDING_ATTACHED: { actions: "recordLateRecording" },
        DELETE: "deleted",
      },
    },
    recorded: {
      tags: ["settled"],
      entry: "askIfTranscoding",
      on: {
        RECORDING_TRANSCODED: { actions: "recordTranscoded" },
        RECORDING_DELETED: { actions: "recordDeleted" },
        DELETE: "deleted",
      },
    },
    error: { tags: ["settled"], on: { DELETE: "deleted" } },
    deleted: { type: "final" },
  },
});
