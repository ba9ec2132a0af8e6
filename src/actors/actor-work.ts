import type { WorkHandlers } from "../work/work-runner.ts";
import type { ActorRuntime } from "./actor-runtime.ts";

/**
 * The work types that belong to the actors themselves: a delayed event
 * coming due (`actor-timer`) and a message from another actor
 * (`actor-message`). The runtime delivers both while the row is held, and
 * replaces an event the kind refuses with what the kind says instead.
 */
export function actorWorkHandlers(runtime: ActorRuntime): Pick<WorkHandlers, "actor-timer" | "actor-message"> {
  return {
    "actor-timer": { run: (row) => runtime.fireTimer(row).then(() => undefined) },
    "actor-message": { run: (row) => runtime.deliver(row).then(() => undefined) },
  };
}
