import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { initialTransition, transition, type AnyStateMachine } from "xstate";
import type { DomainEvent } from "../../machines/contracts.ts";
import type { Database, Tx } from "../db/create-database.ts";
import { actors, actorTags, outbox } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import type { Logger } from "../log.ts";
import { type EventSealer, plainEvents } from "../secrets/event-sealer.ts";
import type { WorkLedger, WorkRow } from "../work/work-ledger.ts";
import type { WorkPolicies } from "../work/work-runner.ts";
import type { ActorContext, ActorEvent, ActorKindName, ActorMachines } from "./actor-kinds.ts";
import { type ActorRecord, createActorRecords, type Persisted } from "./actor-records.ts";
import { type Effects, effectsOf, hasEffects } from "./effects.ts";

export { type ActorRecord, ActorVersionError, type ListPage } from "./actor-records.ts";

/** What changed in one transition, for a kind's `check` (inside the transaction). */
export interface TagChange {
  id: string;
  orgId: string;
  before: ReadonlySet<string>;
  after: ReadonlySet<string>;
  /** A tag newly entered by this transition. */
  entered(tag: string): boolean;
}

export interface ActorKindSpec<K extends ActorKindName> {
  machine: ActorMachines[K];
  /** The version of the machine's states; stored with each row. */
  version: number;
  /** Upgrades a state value stored by version `from` (< `version`) to this version's. Without it, older rows are refused. */
  migrate?(from: number, value: unknown): unknown;
  /** Maps a state value to the public status column. */
  statusOf(value: unknown): string;
  /** The stored form of a context (e.g. secrets sealed) and back; `id` is the actor's. Contexts are stored as they are without. */
  seal?(context: ActorContext<K>, id: string): unknown;
  open?(stored: unknown, id: string): ActorContext<K>;
  /** Runs in the transaction of every transition (e.g. slot limits); throwing rolls the transition back. */
  check?(tx: Tx, change: TagChange): Promise<void>;
  /** An event from a timer or a message that `check` refused: what to send instead (e.g. FAIL), or null to give up. */
  refused?(err: unknown, event: { type: string }): ActorEvent<K> | null;
}

export type ActorKinds = { [K in ActorKindName]: ActorKindSpec<K> };

export interface TransitionResult<C = any> {
  record: ActorRecord<C>;
  previousStatus: string | null;
  changed: boolean;
  events: DomainEvent[];
}

/** Work written due sooner than this wakes the runner at commit; later rows are found by its poll (at most this far apart: service.ts). */
export const WAKE_WITHIN_MS = 1000;

const timerKey = (actorId: string, sendId: string) => `timer:${actorId}:${sendId}`;

/**
 * Loads and persists actors. Every transition is computed with XState's pure
 * `transition()` inside a write transaction, and everything it asks for is
 * written in that same transaction: the new snapshot and its state tags,
 * domain events (outbox), work (the ledger), messages to other actors
 * (`actor-message` work) and its own delayed events (`actor-timer` work,
 * deleted again by XState's `cancel` when the state is left). A crash can
 * never keep one without the others, and nothing the machine asked for
 * lives only in memory: a restart, or another process, picks up exactly
 * where it was.
 */
export function createActorRuntime(opts: {
  database: Database;
  logger: Logger;
  kinds: ActorKinds;
  ledger: WorkLedger;
  policies: WorkPolicies;
  /**
   * The events someone consumes by fan-out (the organization's webhook subscriptions), read in the transaction that
   * writes them: an outbox row of another event is written already fanned out (src/webhooks/subscribed-events.ts).
   * Without it every row waits for the fan-out.
   */
  subscribedEvents?: (tx: Tx, orgId: string) => Promise<ReadonlySet<string>>;
  /** How event payloads are stored (sealed by the service: src/secrets/event-sealer.ts); as they are without. */
  events?: EventSealer;
}) {
  const { database, kinds, ledger, policies } = opts;
  const sealer = opts.events ?? plainEvents;
  const outboxListeners = new Set<() => void>();
  const workListeners = new Set<() => void>();

  const spec = <K extends ActorKindName>(kind: K): ActorKindSpec<K> => kinds[kind];
  const machineOf = (kind: ActorKindName) => spec(kind).machine as AnyStateMachine;
  const reads = createActorRecords(database, kinds);
  const { upgrade, toRecord } = reads;

  function stored(kind: ActorKindName, id: string, state: Persisted): Persisted {
    const seal = spec(kind).seal as ((c: unknown, id: string) => unknown) | undefined;
    return seal ? { value: state.value, context: seal(state.context, id) } : state;
  }

  /** Every row the transition asked for, in its transaction. Answers whether work rows were written (to wake the runner). */
  async function writeEffects(tx: Tx, kind: ActorKindName, id: string, orgId: string, fx: Effects, now: number, firing?: string): Promise<boolean> {
    if (fx.domain.length > 0) {
      const heard = await opts.subscribedEvents?.(tx, orgId);
      await tx.insert(outbox).values(
        fx.domain.map((e) => {
          const eventId = newId("evt");
          return { id: eventId, orgId, entityId: id, event: e.event, payload: sealer.sealPayload(e.data, eventId), createdAt: now, fannedOutAt: heard && !heard.has(e.event) ? now : null };
        }),
      );
    }
    for (const sendId of fx.cancels) await ledger.cancelKey(tx, timerKey(id, sendId), firing);
    for (const t of fx.timers) {
      await ledger.enqueue(tx, {
        type: "actor-timer",
        payload: { kind, actorId: id, sendId: t.sendId, event: t.event },
        orgId,
        entityId: id,
        maxAttempts: policies["actor-timer"].maxAttempts,
        runAfter: now + t.delayMs,
        dedupeKey: timerKey(id, t.sendId),
      });
    }
    for (const w of fx.work) {
      // One open row of a type per actor: asking again while one is open reschedules it.
      await ledger.enqueue(tx, { ...w.work, orgId, entityId: id, maxAttempts: policies[w.work.type].maxAttempts, runAfter: now + (w.delayMs ?? 0), dedupeKey: `${w.work.type}:${id}` });
    }
    for (const m of fx.messages) {
      await ledger.enqueue(tx, { type: "actor-message", payload: m, orgId, entityId: m.actorId, maxAttempts: policies["actor-message"].maxAttempts });
    }
    // The runner polls at least every WAKE_WITHIN_MS (service.ts) and then arms a timer for a row due before its next
    // poll: waking it for a row due later (a stream's idle timeout, minutes away) only costs a claim query per work type.
    return fx.messages.length > 0 || fx.timers.some((t) => t.delayMs < WAKE_WITHIN_MS) || fx.work.some((w) => (w.delayMs ?? 0) < WAKE_WITHIN_MS);
  }

  async function writeTags(tx: Tx, kind: ActorKindName, id: string, orgId: string, before: ReadonlySet<string>, after: ReadonlySet<string>, rewrite: boolean) {
    const removed = rewrite ? null : [...before].filter((t) => !after.has(t));
    const added = rewrite ? [...after] : [...after].filter((t) => !before.has(t));
    if (rewrite) await tx.delete(actorTags).where(eq(actorTags.actorId, id));
    else if (removed && removed.length > 0) await tx.delete(actorTags).where(and(eq(actorTags.actorId, id), inArray(actorTags.tag, removed)));
    if (added.length > 0) await tx.insert(actorTags).values(added.map((tag) => ({ kind, tag, orgId, actorId: id })));
  }

  function tagChange(id: string, orgId: string, before: ReadonlySet<string>, after: ReadonlySet<string>): TagChange {
    return { id, orgId, before, after, entered: (tag) => after.has(tag) && !before.has(tag) };
  }

  interface Step {
    result: TransitionResult;
    wroteWork: boolean;
  }

  /** One transition of a stored actor inside `tx`; null when the actor does not exist. */
  async function step(tx: Tx, kind: ActorKindName, id: string, event: { type: string }, firing?: string): Promise<Step | null> {
    const rows = await tx
      .select()
      .from(actors)
      .where(and(eq(actors.id, id), eq(actors.kind, kind)))
      .limit(1);
    const row = rows[0];
    if (!row) return null;
    const s = spec(kind);
    const machine = machineOf(kind);
    const { state: storedState, migrated } = upgrade(row);
    const before = toRecord(row, storedState);
    const snapshot = machine.resolveState({ value: before.value as never, context: before.context });
    const [next, actions] = transition(machine, snapshot, event as never);
    const fx = effectsOf(actions as never);
    const state: Persisted = { value: next.value, context: next.context };
    const changed = migrated || hasEffects(fx) || JSON.stringify(state) !== JSON.stringify({ value: before.value, context: before.context });
    if (!changed) return { result: { record: before, previousStatus: before.status, changed: false, events: [] }, wroteWork: false };
    const now = Date.now();
    const status = s.statusOf(next.value);
    const tags = new Set<string>(next.tags);
    await tx
      .update(actors)
      .set({ state: stored(kind, id, state), status, version: before.version + 1, machineVersion: s.version, updatedAt: now, deletedAt: status === "DELETED" ? now : null })
      .where(eq(actors.id, id));
    await writeTags(tx, kind, id, row.orgId, before.tags, tags, migrated);
    await s.check?.(tx, tagChange(id, row.orgId, before.tags, tags));
    const wroteWork = await writeEffects(tx, kind, id, row.orgId, fx, now, firing);
    const record: ActorRecord = { ...before, status, value: next.value, context: next.context, tags, updatedAt: now, version: before.version + 1 };
    return { result: { record, previousStatus: before.status, changed: true, events: fx.domain }, wroteWork };
  }

  /**
   * Creates an actor from its machine input inside `tx`. With a `dedupeKey`,
   * an existing live actor of the same organization, kind and key is
   * returned instead.
   */
  async function createIn<K extends ActorKindName>(
    tx: Tx,
    kind: K,
    input: ActorContext<K>,
    options: { dedupeKey?: string; within?: (tx: Tx, record: ActorRecord<ActorContext<K>>) => Promise<void> } = {},
  ): Promise<{ result: TransitionResult<ActorContext<K>> & { created: boolean }; wroteWork: boolean }> {
    const s = spec(kind);
    const { id, orgId } = input as { id: string; orgId: string };
    if (options.dedupeKey) {
      const existing = await tx
        .select()
        .from(actors)
        .where(and(eq(actors.orgId, orgId), eq(actors.kind, kind), eq(actors.dedupeKey, options.dedupeKey), isNull(actors.deletedAt)))
        .limit(1);
      if (existing[0]) {
        const record = toRecord(existing[0]);
        return { result: { record, previousStatus: record.status, changed: false, events: [], created: false }, wroteWork: false };
      }
    }
    const [snapshot, actions] = initialTransition(machineOf(kind), input);
    const fx = effectsOf(actions as never);
    const now = Date.now();
    const status = s.statusOf(snapshot.value);
    const tags = new Set<string>(snapshot.tags);
    const state: Persisted = { value: snapshot.value, context: snapshot.context };
    await tx
      .insert(actors)
      .values({ id, kind, orgId, status, state: stored(kind, id, state), dedupeKey: options.dedupeKey ?? null, version: 1, machineVersion: s.version, createdAt: now, updatedAt: now });
    await writeTags(tx, kind, id, orgId, new Set(), tags, false);
    // After the tags are written, so counts by tag include this actor.
    await s.check?.(tx, tagChange(id, orgId, new Set(), tags));
    const wroteWork = await writeEffects(tx, kind, id, orgId, fx, now);
    const record: ActorRecord = { id, kind, orgId, status, value: snapshot.value, context: snapshot.context, tags, createdAt: now, updatedAt: now, version: 1 };
    // Work that must commit or roll back with the creation (e.g. queueing its transcode).
    if (options.within) await options.within(tx, record);
    return { result: { record, previousStatus: null, changed: true, events: fx.domain, created: true }, wroteWork };
  }

  /** Sends one of the kind's events; null when the actor does not exist. Unhandled events change nothing. */
  async function send<K extends ActorKindName>(
    kind: K,
    id: string,
    event: ActorEvent<K>,
    options: {
      /** Runs in the transaction after the transition, when it changed something: work that commits or rolls back with it. */
      within?: (tx: Tx, result: TransitionResult<ActorContext<K>>) => Promise<void>;
      /** Runs first in the transaction, whatever the transition does (e.g. take or release a lease); `"skip"` sends nothing. */
      before?: (tx: Tx) => Promise<"skip" | undefined>;
    } = {},
  ): Promise<TransitionResult<ActorContext<K>> | null> {
    const out = await database.write(async (tx) => {
      if ((await options.before?.(tx)) === "skip") return null;
      const done = await step(tx, kind, id, event);
      if (done?.result.changed && options.within) await options.within(tx, done.result);
      return done;
    });
    if (out?.result.changed) committed(out.result.events, out.wroteWork);
    return (out?.result ?? null) as TransitionResult<ActorContext<K>> | null;
  }

  /**
   * An event carried by a work row we hold (a timer, a message), in one
   * transaction with its transition; nothing when the row is no longer ours.
   * An event the kind's `check` refuses is replaced by what the kind says
   * instead (a booked stream finding no slot free: its FAIL).
   */
  async function deliverHeld(row: WorkRow<"actor-timer"> | WorkRow<"actor-message">, firing?: string): Promise<TransitionResult | null> {
    const { kind, actorId, event } = row.payload;
    try {
      const out = await database.write(async (tx) => ((await ledger.holds(tx, row.id)) ? step(tx, kind, actorId, event, firing) : null));
      if (out?.result.changed) committed(out.result.events, out.wroteWork);
      return out?.result ?? null;
    } catch (err) {
      const instead = spec(kind).refused?.(err, event);
      if (!instead) throw err;
      return send(kind, actorId, instead as never);
    }
  }

  function committed(events: DomainEvent[], wroteWork: boolean) {
    if (events.length > 0) for (const l of outboxListeners) l();
    if (wroteWork) for (const l of workListeners) l();
  }

  return {
    database,

    /** Reads an actor of one organization (another organization's id is simply absent). */
    get: reads.get,

    /** One organization's actors of a kind, newest first (actor-records.ts). */
    list: reads.list,

    /**
     * Creates an actor from its machine input. With a `dedupeKey`, an existing
     * live actor of the same organization, kind and key is returned instead.
     */
    async create<K extends ActorKindName>(
      kind: K,
      input: ActorContext<K>,
      options: { dedupeKey?: string; within?: (tx: Tx, record: ActorRecord<ActorContext<K>>) => Promise<void> } = {},
    ): Promise<TransitionResult<ActorContext<K>> & { created: boolean }> {
      const out = await database.write((tx) => createIn(tx, kind, input, options));
      if (out.result.created) committed(out.result.events, out.wroteWork);
      return out.result;
    },

    /**
     * `create` inside the caller's transaction (e.g. a live stream's recording
     * entering the library in the transaction that ends the stream). The
     * caller wakes the work runner after its commit.
     */
    createIn,

    send,

    /**
     * `send` inside the caller's transaction: a work row's outcome and the
     * transition it causes commit together (the work runner failing a video's
     * transcode: the row's `failed` and the video's ERROR). `afterCommit`
     * wakes the dispatcher and the runner; call it once the caller committed.
     */
    async sendIn<K extends ActorKindName>(tx: Tx, kind: K, id: string, event: ActorEvent<K>): Promise<{ result: TransitionResult<ActorContext<K>> | null; afterCommit: () => void }> {
      const done = await step(tx, kind, id, event);
      return {
        result: (done?.result ?? null) as TransitionResult<ActorContext<K>> | null,
        afterCommit: () => {
          if (done?.result.changed) committed(done.result.events, done.wroteWork);
        },
      };
    },

    /**
     * Fires a timer row we hold: only while the row is still ours, in one
     * transaction with the transition (a timer cancelled by a transition that
     * committed first does nothing).
     */
    async fireTimer(row: WorkRow<"actor-timer">): Promise<TransitionResult | null> {
      return deliverHeld(row, row.id);
    },

    /** Delivers a durable message (`actor-message` work) to its actor, as `fireTimer` does. */
    async deliver(row: WorkRow<"actor-message">): Promise<TransitionResult | null> {
      return deliverHeld(row);
    },

    /** Ids of the actors of a kind that carry a tag. */
    async tagged(kind: ActorKindName, tag: string): Promise<{ id: string; orgId: string }[]> {
      return database.db
        .select({ id: actorTags.actorId, orgId: actorTags.orgId })
        .from(actorTags)
        .where(and(eq(actorTags.kind, kind), eq(actorTags.tag, tag)));
    },

    /**
     * Rows stored by an older version of a kind's machine get `event` (e.g.
     * UPGRADED), which migrates them and lets the machine re-arm what the old
     * version kept elsewhere. Answers how many were upgraded.
     */
    async upgrade<K extends ActorKindName>(kind: K, event: ActorEvent<K>): Promise<number> {
      const rows = await database.db
        .select({ id: actors.id })
        .from(actors)
        .where(and(eq(actors.kind, kind), isNull(actors.deletedAt), sql`${actors.machineVersion} < ${spec(kind).version}`));
      for (const r of rows) await this.send(kind, r.id, event);
      return rows.length;
    },

    /** Called after a commit that wrote outbox rows (wakes the dispatcher). */
    onOutbox(listener: () => void): () => void {
      outboxListeners.add(listener);
      return () => outboxListeners.delete(listener);
    },

    /** Called after a commit that wrote work rows (wakes the work runner). */
    onWork(listener: () => void): () => void {
      workListeners.add(listener);
      return () => workListeners.delete(listener);
    },
  };
}

export type ActorRuntime = ReturnType<typeof createActorRuntime>;
