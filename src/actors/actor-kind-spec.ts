import type { StateMachine } from "xstate";
import type { ActorEvent, ActorKindName, ActorMachines } from "./actor-kinds.ts";
import type { SecretGroup } from "./context-secrets.ts";

type TagsOf<M> = M extends StateMachine<any, any, any, any, any, any, any, any, infer T, any, any, any, any, any, any> ? T : never;

/** The state tags a kind's machine declares (`types.tags` in its `setup`): a misspelt tag does not compile. */
export type ActorTag<K extends ActorKindName> = TagsOf<ActorMachines[K]>;
/** A tag of any kind: what a record of an unknown kind may carry. */
export type AnyActorTag = ActorTag<ActorKindName>;

/** What changed in one transition, for a kind's `check` (inside the transaction). */
export interface TagChange<K extends ActorKindName = ActorKindName> {
  id: string;
  orgId: string;
  before: ReadonlySet<ActorTag<K>>;
  after: ReadonlySet<ActorTag<K>>;
  /** A tag newly entered by this transition. */
  entered(tag: ActorTag<K>): boolean;
}

/** Counts by tag inside the transition's transaction (a count includes the actor being changed). */
export interface TagCounts<K extends ActorKindName> {
  /** How many actors of the kind carry `tag` (all organizations, or one): one range of actor_tags' primary key. */
  count(tag: ActorTag<K>, orgId?: string): Promise<number>;
}

export interface ActorKindSpec<K extends ActorKindName> {
  machine: ActorMachines[K];
  /** The version of the machine's states; stored with each row. */
  version: number;
  /** Upgrades a state value stored by version `from` (< `version`) to this version's. Without it, older rows are refused. */
  migrate?(from: number, value: unknown): unknown;
  /** Maps a state value to the public status column. */
  statusOf(value: unknown): string;
  /**
   * The context's secret fields: stored sealed (the runtime's `secrets` cipher, the actor id as associated data),
   * opened on every read (context-secrets.ts). Contexts are stored as they are without.
   */
  secrets?: readonly SecretGroup[];
  /** Runs in the transaction of every transition (e.g. slot limits); throwing rolls the transition back. */
  check?(change: TagChange<K>, counts: TagCounts<K>): Promise<void>;
  /** An event from a timer or a message that `check` refused: what to send instead (e.g. FAIL), or null to give up. */
  refused?(err: unknown, event: { type: string }): ActorEvent<K> | null;
}

export type ActorKinds = { [K in ActorKindName]: ActorKindSpec<K> };
