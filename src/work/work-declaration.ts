import type { WorkPolicies } from "./work-policies.ts";
import type { WorkMap } from "./work-types.ts";

/**
 * One module's work: its types with their payloads (the type parameter) and
 * each type's policy. The module's handlers for the same map are typed
 * `WorkHandlers<P>` (work-runner.ts) and given to the runner by the
 * composition root, which assembles every declaration (work-registry.ts).
 */
export interface WorkDeclaration<P extends WorkMap> {
  /** Who declares it (named when two modules declare one type). */
  readonly module: string;
  readonly policies: WorkPolicies<P>;
  /** Type-only: the payload map (never set). */
  readonly payloads?: P;
}

/** Declares a module's work: `defineWork<{ "thing-do": { thingId: string } }>("things", { "thing-do": policy })`. */
export function defineWork<P extends WorkMap>(module: string, policies: WorkPolicies<P>): WorkDeclaration<P> {
  return { module, policies };
}
