import type { WorkHandlers } from "../work/work-runner.ts";
import type { ActorRuntime } from "./actor-runtime.ts";

/**
 * The work types that belong to the actors themselves: a delayed event
 * coming due (`actor-timer`) and a message from another actor
 * (`actor-message`). An event a kind's `check` refuses (a booked stream
 * finding no slot free) is replaced by what the kind says (its FAIL).
 */
export function actorWorkHandlers(runtime: ActorRuntime): Pick<WorkHandlers, "actor-timer" | "actor-message"> {
  return {
    "actor-timer": {
      async run(row) {
        const { kind, actorId, event } = row.payload;
        try {
          await runtime.fireTimer(row);
        } catch (err) {
          const instead = runtime.refused(kind, err, event);
          if (!instead) throw err;
          await runtime.send(kind, actorId, instead as never);
        }
      },
    },
    "actor-message": {
      async run(row) {
        const { kind, actorId, event } = row.payload;
        try {
          await runtime.deliver(row);
        } catch (err) {
          const instead = runtime.refused(kind, err, event);
          if (!instead) throw err;
          await runtime.send(kind, actorId, instead as never);
        }
      },
    },
  };
}
