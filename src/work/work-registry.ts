import type { WorkDeclaration } from "./work-declaration.ts";
import type { WorkPolicies, WorkPolicy } from "./work-policies.ts";
import type { WorkMap } from "./work-types.ts";

type PayloadsOf<D> = D extends WorkDeclaration<infer P> ? P : never;
type Intersect<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The payload map assembled from declarations: every module's types together. */
export type AssembledWork<Ds extends readonly WorkDeclaration<WorkMap>[]> = Intersect<PayloadsOf<Ds[number]>> extends infer I extends WorkMap ? I : never;

/** Every declared type's policy, and who declared it: what the ledger and the runner run by. */
export interface WorkRegistry<P extends WorkMap> {
  readonly policies: WorkPolicies<P>;
  readonly types: readonly string[];
  /** The module that declared a type. */
  readonly owner: Record<string, string>;
  /** A type's policy (an undeclared type, read from an old row, throws). */
  policy(type: string): WorkPolicy;
}

/** Assembles the modules' declarations into one registry; a type declared by two modules is refused. */
export function assembleWork<const Ds extends readonly WorkDeclaration<WorkMap>[]>(...declarations: Ds): WorkRegistry<AssembledWork<Ds>> {
  const policies: Record<string, WorkPolicy> = {};
  const owner: Record<string, string> = {};
  for (const d of declarations) {
    for (const [type, policy] of Object.entries(d.policies as Record<string, WorkPolicy>)) {
      if (owner[type]) throw new Error(`Work type "${type}" is declared by both "${owner[type]}" and "${d.module}".`);
      owner[type] = d.module;
      policies[type] = policy;
    }
  }
  return registryOf(policies as WorkPolicies<AssembledWork<Ds>>, owner);
}

/** A registry straight from one policy table (tests that run a map of their own). */
export function registryOf<P extends WorkMap>(policies: WorkPolicies<P>, owner: Record<string, string> = {}): WorkRegistry<P> {
  const table = policies as Record<string, WorkPolicy>;
  return {
    policies,
    types: Object.keys(table),
    owner,
    policy(type) {
      const p = table[type];
      if (!p) throw new Error(`Work type "${type}" is not declared.`);
      return p;
    },
  };
}
