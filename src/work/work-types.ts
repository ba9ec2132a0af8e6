/**
 * A payload map: each work type a module declares, with its payload
 * (`{ "live-watch": { streamId: string } }`). The ledger and the runner are
 * generic over one; the composition root assembles the service's from the
 * modules' declarations (work-registry.ts), so this folder names no module's
 * payloads.
 */
export type WorkMap = object;

/** The work types of a payload map. */
export type WorkType<P extends WorkMap> = keyof P & string;

/** Any payload of a map (what the `payload` column holds). */
export type WorkPayload<P extends WorkMap = WorkMap> = P[WorkType<P>];

/** A request for work: the type and its own payload, checked together. */
export type WorkRequest<P extends WorkMap> = { [T in WorkType<P>]: { type: T; payload: P[T] } }[WorkType<P>];
