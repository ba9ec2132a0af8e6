/**
 * A payload map declared only for this folder's tests (the ledger and the
 * runner know no module's types): names and policies like the service's, so
 * the tests read as before.
 */
import { defineWork } from "./work-declaration.ts";
import { exponentialBackoffMs, MINUTE, quickBackoffMs } from "./work-policies.ts";
import { assembleWork } from "./work-registry.ts";

export interface FixtureWork {
  "fetch-source": Record<string, never>;
  transcode: { sourcePath?: string; fetched?: boolean };
  "live-watch": { streamId: string };
  retention: Record<string, never>;
}

export const fixtureWork = () =>
  assembleWork(
    defineWork<FixtureWork>("fixture", {
      "fetch-source": { maxAttempts: 3, backoffMs: exponentialBackoffMs, concurrency: 8, perOrgLimit: 4, timeoutMs: 31 * MINUTE },
      transcode: { maxAttempts: 3, backoffMs: exponentialBackoffMs, concurrency: 2, timeoutMs: 361 * MINUTE },
      "live-watch": { maxAttempts: 10, backoffMs: quickBackoffMs, concurrency: 4, timeoutMs: MINUTE },
      retention: { maxAttempts: 3, backoffMs: exponentialBackoffMs, concurrency: 1, timeoutMs: 30 * MINUTE },
    }),
  );
