import type { ActorMessage, ActorTimer, MachineWork } from "../../machines/contracts.ts";

/**
 * Every type of work the ledger runs, with its payload. Adding a type here
 * makes `workPolicies` and the handler registry (`WorkHandlers`) incomplete
 * until both name it: the compiler keeps the three in step.
 */
export interface WorkPayloads {
  /** Stream a URL source into the video's work dir, then become its `transcode`. */
  "fetch-source": Record<string, never>;
  /** Transcode a source on disk into the ladder. */
  transcode: MachineWork["transcode"];
  /** Close a broadcast, register its recording and tell the stream: resumable, each step idempotent. */
  "live-finalize": MachineWork["live-finalize"];
  /** Watch a broadcast's owner lease: when it lapses (the owner died), the stream is told the broadcast is lost. */
  "live-watch": { streamId: string };
  /** Remove an ended stream's live HLS files once LIVE_FILES_RETENTION_MS has passed. */
  "live-files-remove": { streamId: string };
  "actor-timer": ActorTimer;
  "actor-message": ActorMessage;
  /** Batched deletes of what has outlived its retention period; re-queues itself. */
  retention: Record<string, never>;
}

export type WorkType = keyof WorkPayloads;
export type WorkPayload = WorkPayloads[WorkType];

/** A request for work: the type and its own payload, checked together. */
export type WorkRequest = { [T in WorkType]: { type: T; payload: WorkPayloads[T] } }[WorkType];
