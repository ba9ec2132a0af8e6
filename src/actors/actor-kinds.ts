import type { ContextFrom } from "xstate";
import type { ActorEvents, ActorKindName } from "../../machines/contracts.ts";
import type { livestreamMachine } from "../../machines/livestream-machine.ts";
import type { videoMachine } from "../../machines/video-machine.ts";

export type { ActorKindName, ActorMessage, ActorTimer } from "../../machines/contracts.ts";

/** Every kind of actor the runtime stores, by name: the one place a new kind is added. */
export interface ActorMachines {
  video: typeof videoMachine;
  livestream: typeof livestreamMachine;
}

/** The events a kind's machine accepts: `runtime.send` takes nothing else, so a misspelt event does not compile. */
export type ActorEvent<K extends ActorKindName> = ActorEvents[K];
export type ActorContext<K extends ActorKindName> = ContextFrom<ActorMachines[K]>;
