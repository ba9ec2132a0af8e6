import { defineWork } from "../work/work-declaration.ts";
import { exponentialBackoffMs, MINUTE } from "../work/work-policies.ts";

/** The retention module's work: one sweep that re-queues itself. */
export interface RetentionWork {
  /** Batched deletes of what has outlived its retention period. */
  retention: Record<string, never>;
}

/** Its policy (handler: retention-handler.ts). */
export const retentionWork = defineWork<RetentionWork>("retention", {
  retention: { maxAttempts: 3, backoffMs: exponentialBackoffMs, concurrency: 1, timeoutMs: 30 * MINUTE },
});
