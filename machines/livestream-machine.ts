import { assertEvent, assign, emit, setup } from "xstate";
import type { DomainEvent } from "./domain-event.ts";
import { fullStream, smallStream, type RecordingInfo, type StreamContext, type StreamStatus } from "./livestream-payload.ts";

export type StreamEvent =
  /** The booking time is near (croner). */
  | { type: "READY" }
  /** The service's own player downloaded and demuxed a segment. */
  | { type: "MEDIA_OBSERVED"; at: string }
  /** The publisher left and its reconnect window passed: the pipeline ends the stream. */
  | { type: "PIPELINE_ENDED"; at: string; durationSeconds: number | null; transcodingInSecs: number | null; recording: RecordingInfo | null }
  /** POST /livestreams/{id}/end/ */
  | { type: "END_REQUESTED"; at: string; durationSeconds: number | null }
  /** The recording of an explicitly ended stream entered the library. */
  | { type: "RECORDING_ATTACHED"; recording: RecordingInfo }
  /** The recording's transcode finished: COMPLETED (its HLS manifest) or failed / gone (null). */
  | { type: "RECORDING_TRANSCODED"; playbackUrl: string | null }
  | { type: "FAIL"; at: string; error: { code: string; message: string } }
  | { type: "DELETE" };

const STATUS: Record<string, StreamStatus | "DELETED"> = {
  scheduled: "SCHEDULED",
  ready: "READY_TO_STREAM",
  live: "LIVE",
  ended: "ENDED",
  recorded: "ENDED",
  error: "ERROR",
  deleted: "DELETED",
};

export function streamStatus(value: unknown): StreamStatus | "DELETED" {
  return STATUS[String(value)] ?? "ERROR";
}

const full = (event: string, status: StreamStatus) => ({ type: "emitFull", params: { event, status } }) as const;
const small = (event: string) => ({ type: "emitSmall", params: { event } }) as const;

/** How a stream that is ready or on air can end: the same from both states. */
const ENDINGS = {
  PIPELINE_ENDED: { target: "ended", actions: ["recordPipelineEnd", small("LIVESTREAM_ENDED")] },
  END_REQUESTED: { target: "ended", actions: ["recordExplicitEnd", full("LIVESTREAM_ENDED", "ENDED")] },
  FAIL: { target: "error", actions: "recordFailure" },
  DELETE: "deleted",
} as const;

/**
 * A live stream: created (LIVESTREAM_SCHEDULED) → SCHEDULED until its booking is
 * near, or READY_TO_STREAM at once → LIVE when media is observed → ENDED by the
 * pipeline (small shape + recording, then RECORDING_READY) or by an explicit
 * end (full shape; RECORDING_READY follows when the recording is attached).
 */
export const livestreamMachine = setup({
  types: {
    context: {} as StreamContext,
    input: {} as StreamContext,
    events: {} as StreamEvent,
    emitted: {} as DomainEvent,
  },
  actions: {
    recordPipelineEnd: assign(({ event }) => {
      assertEvent(event, "PIPELINE_ENDED");
      return { endedAt: event.at, durationSeconds: event.durationSeconds, transcodingInSecs: event.transcodingInSecs, recording: event.recording };
    }),
    recordExplicitEnd: assign(({ event }) => {
      assertEvent(event, "END_REQUESTED");
      return { endedAt: event.at, durationSeconds: event.durationSeconds };
    }),
    recordTranscoded: assign(({ context, event }) => {
      assertEvent(event, "RECORDING_TRANSCODED");
      return { playbackUrl: event.playbackUrl, recording: context.recording ? { ...context.recording, transcoding: false } : null };
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
      on: {
        READY: "ready",
        END_REQUESTED: { target: "ended", actions: ["recordExplicitEnd", full("LIVESTREAM_ENDED", "ENDED")] },
        FAIL: { target: "error", actions: "recordFailure" },
        DELETE: "deleted",
      },
    },
    ready: {
      on: {
        MEDIA_OBSERVED: {
          target: "live",
          actions: [assign({ startedAt: ({ event }) => event.at }), full("LIVESTREAM_STARTED", "LIVE")],
        },
        ...ENDINGS,
      },
    },
    live: { on: ENDINGS },
    ended: {
      // RECORDING_READY always accompanies the end when a recording exists.
      always: { guard: "hasRecording", target: "recorded", actions: small("LIVESTREAM_RECORDING_READY") },
      on: {
        RECORDING_ATTACHED: { actions: assign({ recording: ({ event }) => event.recording }) },
        DELETE: "deleted",
      },
    },
    recorded: {
      on: {
        RECORDING_TRANSCODED: { actions: "recordTranscoded" },
        DELETE: "deleted",
      },
    },
    error: { on: { DELETE: "deleted" } },
    deleted: { type: "final" },
  },
});
