import { assertEvent, assign, emit, setup } from "xstate";
import type { DomainEvent } from "./domain-event.ts";
import { videoData, type TranscodeOutcome, type VideoContext, type VideoStatus } from "./video-payload.ts";

export type VideoEvent =
  | { type: "TRANSCODING_STARTED"; transcoderId: string }
  | { type: "PROGRESS"; percent: number }
  | { type: "TRANSCODING_COMPLETED"; outcome: TranscodeOutcome }
  | { type: "TRANSCODING_FAILED"; error: { code: string; message: string } }
  | { type: "DELETE" };

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
export const videoMachine = setup({
  types: {
    context: {} as VideoContext,
    input: {} as VideoContext,
    events: {} as VideoEvent,
    emitted: {} as DomainEvent,
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
      on: {
        TRANSCODING_STARTED: {
          target: "processing",
          actions: [assign({ transcoderId: ({ event }) => event.transcoderId, progress: 0 }), domain("VIDEO_TRANSCODING_STARTED", "TRANSCODING")],
        },
        ...FAILING,
      },
    },
    processing: {
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
    completed: { on: { DELETE: "deleted" } },
    failed: { on: { DELETE: "deleted" } },
    deleted: { type: "final" },
  },
});
