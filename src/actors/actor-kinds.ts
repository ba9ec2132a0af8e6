import type { ContextFrom } from "xstate";
import type { livestreamMachine, StreamEvent } from "../../machines/livestream-machine.ts";
import type { VideoEvent, videoMachine } from "../../machines/video-machine.ts";

/** Every kind of actor the runtime stores, by name: the one place a new kind is added. */
export interface ActorMachines {
  video: typeof videoMachine;
  livestream: typeof livestreamMachine;
}

/** The events each kind's machine declares (its `types.events`); written out, not inferred, so machines may message each other without a type cycle. */
export interface ActorEvents {
  video: VideoEvent;
  livestream: StreamEvent;
}

export type ActorKindName = keyof ActorMachines;
/** The events a kind's machine accepts: `runtime.send` takes nothing else, so a misspelt event does not compile. */
export type ActorEvent<K extends ActorKindName> = ActorEvents[K];
export type ActorContext<K extends ActorKindName> = ContextFrom<ActorMachines[K]>;

/** A durable message to an actor (the payload of `actor-message` work). */
export type ActorMessage = { [K in ActorKindName]: { kind: K; actorId: string; event: ActorEvent<K> } }[ActorKindName];

/** A delayed event of an actor's own (`after`, delayed `raise`): fired by `actor-timer` work unless cancelled first. */
export interface ActorTimer {
  kind: ActorKindName;
  actorId: string;
  /** XState's send id (`xstate.after.<delay>.<state>` for `after`); `cancel` names it. */
  sendId: string;
  event: { type: string };
}
