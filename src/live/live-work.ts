import type { MachineWork } from "../../machines/contracts.ts";
import { broadcasts } from "../db/schema/index.ts";
import { defineWork } from "../work/work-declaration.ts";
import { exponentialBackoffMs, MINUTE, quickBackoffMs } from "../work/work-policies.ts";

/** The live module's work, with its payloads. */
export interface LiveWork {
  /** Close a broadcast, register its recording and tell the stream: resumable, each step idempotent. */
  "live-finalize": MachineWork["live-finalize"];
  /** Watch a broadcast's owner lease: when it lapses (the owner died), the stream is told the broadcast is lost. */
  "live-watch": { streamId: string };
  /** Remove an ended stream's live HLS files once LIVE_FILES_RETENTION_MS has passed. */
  "live-files-remove": { streamId: string };
}

/** Their policies (handlers: live-finalizer.ts). */
export const liveWork = defineWork<LiveWork>("live", {
  // A broadcast's end must happen: many quick attempts, then it is logged as failed for the operator.
  // Runs where the broadcast's lease is held (the process with its publisher and files); anyone's once it lapsed or is gone.
  "live-finalize": {
    maxAttempts: 20,
    backoffMs: quickBackoffMs,
    concurrency: 4,
    timeoutMs: 10 * MINUTE,
    affinity: { table: broadcasts, columns: { id: broadcasts.streamId, claimedBy: broadcasts.claimedBy, leaseUntil: broadcasts.leaseUntil } },
  },
  "live-watch": { maxAttempts: 10, backoffMs: quickBackoffMs, concurrency: 4, timeoutMs: MINUTE },
  "live-files-remove": { maxAttempts: 5, backoffMs: exponentialBackoffMs, concurrency: 1, timeoutMs: 5 * MINUTE },
});
