import type { WorkRequest } from "../src/work/work-types.ts";
import type { DomainEvent } from "./domain-event.ts";
import type { StreamEvent } from "./livestream-machine.ts";
import type { VideoEvent } from "./video-machine.ts";

/**
 * What a machine asks of the world besides its own state, as emitted events
 * the actor runtime turns into rows in the transition's own transaction:
 * a domain event → an outbox row; work → a work row (due after `delayMs`);
 * a message → a durable `actor-message` work row delivered to the other actor.
 * (Delayed events of the machine itself, `after` and delayed `raise`, become
 * timer rows without any help: the runtime reads XState's own actions.)
 */
export type WorkEffect = { type: "work"; work: WorkRequest; delayMs?: number };
export type MessageEffect = { type: "message"; message: { kind: "livestream"; actorId: string; event: StreamEvent } | { kind: "video"; actorId: string; event: VideoEvent } };
export type MachineEffect = DomainEvent | WorkEffect | MessageEffect;
