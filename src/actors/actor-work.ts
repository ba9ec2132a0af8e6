import type { ActorWork } from "../../machines/contracts.ts";
import { defineWork } from "../work/work-declaration.ts";
import { MINUTE, quickBackoffMs } from "../work/work-policies.ts";
import type { WorkHandlers } from "../work/work-runner.ts";
import type { ActorRuntime } from "./actor-runtime.ts";

export type { ActorWork };

/**
 * The work types that belong to the actors themselves: a delayed event
 * coming due (`actor-timer`) and a message from another actor
 * (`actor-message`). The runtime delivers both while the row is held, and
 * replaces an event the kind refuses with what the kind says instead.
 */
export const actorWork = defineWork<ActorWork>("actors", {
  "actor-timer": { maxAttempts: 10, backoffMs: quickBackoffMs, concurrency: 8, timeoutMs: MINUTE },
  "actor-message": { maxAttempts: 10, backoffMs: quickBackoffMs, concurrency: 8, timeoutMs: MINUTE },
});

export function actorWorkHandlers(runtime: ActorRuntime): WorkHandlers<ActorWork> {
  return {
    "actor-timer": { run: (row) => runtime.fireTimer(row).then(() => undefined) },
    "actor-message": { run: (row) => runtime.deliver(row).then(() => undefined) },
  };
}
