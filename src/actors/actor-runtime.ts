import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { initialTransition, transition, type AnyStateMachine } from "xstate";
import type { ActorWork, DomainEvent, MachineWork } from "../../machines/contracts.ts";
import type { Database, Tx } from "../db/create-database.ts";
import { actors, actorTags } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";
import { createOutbox, type Outbox } from "../outbox/outbox.ts";
import type { WorkQueue, WorkRow } from "../work/work-ledger.ts";
import type { ActorKindSpec, ActorKinds, ActorTag, AnyActorTag, TagChange, TagCounts } from "./actor-kind-spec.ts";
import type { ActorContext, ActorEvent, ActorKindName } from "./actor-kinds.ts";
import { type ActorRecord, type AnyRecord, createActorRecords, type Persisted } from "./actor-records.ts";
import { countTagged } from "./actor-tags.ts";
import { type ContextSealer, createContextSealer, secretLeaves, type TextCipher } from "./context-secrets.ts";
import { type Effects, effectsOf, hasEffects } from "./effects.ts";

export { type ActorRecord, ActorVersionError, type ListPage } from "./actor-records.ts";
export type { ActorKindSpec, ActorKinds, ActorTag, TagChange } from "./actor-kind-spec.ts";

/** A kind's record: its context and its machine's tags. */
export type KindRecord<K extends ActorKindName> = ActorRecord<ActorContext<K>, ActorTag<K>>;

/** A row stored before its kind's secrets were sealed, as `sealStoredSecrets` seals it (the context opened). */
export interface PlaintextRow {
  id: string;
  kind: ActorKindName;
  orgId: string;
  createdAt: number;
  deleted: boolean;
  context: unknown;
}

export interface TransitionResult<C = any, T extends string = AnyActorTag> {
  record: ActorRecord<C, T>;
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
  /** The ledger of the actors' own work and of the work their machines ask for (each type's attempts are its declaration's). */
  ledger: WorkQueue<ActorWork & MachineWork>;
  /**
   * The events someone consumes by fan-out (the organization's webhook subscriptions), read in the transaction that
   * writes them: an outbox row of another event is written already fanned out (src/webhooks/subscribed-events.ts).
   * Without it every row waits for the fan-out.
   */
  subscribedEvents?: (tx: Tx, orgId: string) => Promise<ReadonlySet<string>>;
  /** Where domain events are written (src/outbox; payloads sealed by the service's); a plain one on `database` without. */
  outbox?: Outbox;
  /** Seals the kinds' declared secret fields (ActorKindSpec `secrets`, context-secrets.ts); stored as they are without. */
  secrets?: TextCipher;
}) {
  const { database, kinds, ledger } = opts;
  const outbox = opts.outbox ?? createOutbox({ database });
  const outboxListeners = new Set<() => void>();
  const workListeners = new Set<() => void>();

  const spec = <K extends ActorKindName>(kind: K): ActorKindSpec<K> => kinds[kind];
  const machineOf = (kind: ActorKindName) => spec(kind).machine as AnyStateMachine;
  const sealers = new Map<ActorKindName, ContextSealer>();
  for (const kind of Object.keys(kinds) as ActorKindName[]) {
    const groups = kinds[kind].secrets ?? [];
    if (opts.secrets && groups.length > 0) sealers.set(kind, createContextSealer(opts.secrets, groups));
  }
  const reads = createActorRecords(database, kinds, (kind, stored, id) => sealers.get(kind)?.open(stored, id) ?? stored);
  const { upgrade, toRecord } = reads;

  function stored(kind: ActorKindName, id: string, state: Persisted): Persisted {
    const sealer = sealers.get(kind);
    return sealer ? { value: state.value, context: sealer.seal(state.context, id) } : state;
  }

  /** A kind's counts by tag inside `tx`, for its `check`. */
  const countsIn = <K extends ActorKindName>(tx: Tx, kind: K): TagCounts<K> => ({ count: (tag, orgId) => countTagged(tx, kind, tag, orgId) });

  /** Every row the transition asked for, in its transaction. Answers whether work rows were written (to wake the runner). */
  async function writeEffects(tx: Tx, kind: ActorKindName, id: string, orgId: string, fx: Effects, now: number, firing?: string): Promise<boolean> {
    if (fx.domain.length > 0) {
      const heard = await opts.subscribedEvents?.(tx, orgId);
      await outbox.append(
        tx,
        fx.domain.map((e) => ({ orgId, entityId: id, event: e.event, data: e.data, fannedOut: heard !== undefined && !heard.has(e.event) })),
        now,
      );
    }
    for (const sendId of fx.cancels) await ledger.cancelKey(tx, timerKey(id, sendId), firing);
    for (const t of fx.timers) {
      await ledger.enqueue(tx, {
        type: "actor-timer",
        payload: { kind, actorId: id, sendId: t.sendId, event: t.event },
        orgId,
        entityId: id,
        runAfter: now + t.delayMs,
        dedupeKey: timerKey(id, t.sendId),
      });
    }
    for (const w of fx.work) {
      // One open row of a type per actor: asking again while one is open reschedules it.
      await ledger.enqueue(tx, { ...w.work, orgId, entityId: id, runAfter: now + (w.delayMs ?? 0), dedupeKey: `${w.work.type}:${id}` });
    }
    for (const m of fx.messages) {
      await ledger.enqueue(tx, { type: "actor-message", payload: m, orgId, entityId: m.actorId });
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

  function tagChange(id: string, orgId: string, before: ReadonlySet<string>, after: ReadonlySet<string>): TagChange<any> {
    return { id, orgId, before, after, entered: (tag: string) => after.has(tag) && !before.has(tag) };
  }

  interface Step {
    result: TransitionResult<any, any>;
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
    const tags = new Set<any>(next.tags);
    await tx
      .update(actors)
      .set({ state: stored(kind, id, state), status, version: before.version + 1, machineVersion: s.version, updatedAt: now, deletedAt: status === "DELETED" ? now : null })
      .where(eq(actors.id, id));
    await writeTags(tx, kind, id, row.orgId, before.tags, tags, migrated);
    await s.check?.(tagChange(id, row.orgId, before.tags, tags), countsIn(tx, kind));
    const wroteWork = await writeEffects(tx, kind, id, row.orgId, fx, now, firing);
    const record: AnyRecord = { ...before, status, value: next.value, context: next.context, tags, updatedAt: now, version: before.version + 1 };
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
    options: { dedupeKey?: string; within?: (tx: Tx, record: KindRecord<K>) => Promise<void> } = {},
  ): Promise<{ result: TransitionResult<ActorContext<K>, ActorTag<K>> & { created: boolean }; wroteWork: boolean }> {
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
    const tags = new Set<any>(snapshot.tags);
    const state: Persisted = { value: snapshot.value, context: snapshot.context };
    await tx
      .insert(actors)
      .values({ id, kind, orgId, status, state: stored(kind, id, state), dedupeKey: options.dedupeKey ?? null, version: 1, machineVersion: s.version, createdAt: now, updatedAt: now });
    await writeTags(tx, kind, id, orgId, new Set(), tags, false);
    // After the tags are written, so counts by tag include this actor.
    await s.check?.(tagChange(id, orgId, new Set(), tags), countsIn(tx, kind));
    const wroteWork = await writeEffects(tx, kind, id, orgId, fx, now);
    const record: AnyRecord = { id, kind, orgId, status, value: snapshot.value, context: snapshot.context, tags, createdAt: now, updatedAt: now, version: 1 };
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
      within?: (tx: Tx, result: TransitionResult<ActorContext<K>, ActorTag<K>>) => Promise<void>;
      /** Runs first in the transaction, whatever the transition does (e.g. take or release a lease); `"skip"` sends nothing. */
      before?: (tx: Tx) => Promise<"skip" | undefined>;
    } = {},
  ): Promise<TransitionResult<ActorContext<K>, ActorTag<K>> | null> {
    const out = await database.write(async (tx) => {
      if ((await options.before?.(tx)) === "skip") return null;
      const done = await step(tx, kind, id, event);
      if (done?.result.changed && options.within) await options.within(tx, done.result);
      return done;
    });
    if (out?.result.changed) committed(out.result.events, out.wroteWork);
    return (out?.result ?? null) as TransitionResult<ActorContext<K>, ActorTag<K>> | null;
  }

  /**
   * An event carried by a work row we hold (a timer, a message), in one
   * transaction with its transition; nothing when the row is no longer ours.
   * An event the kind's `check` refuses is replaced by what the kind says
   * instead (a booked stream finding no slot free: its FAIL).
   */
  async function deliverHeld(row: WorkRow<ActorWork, "actor-timer"> | WorkRow<ActorWork, "actor-message">, firing?: string): Promise<TransitionResult | null> {
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
      options: { dedupeKey?: string; within?: (tx: Tx, record: KindRecord<K>) => Promise<void> } = {},
    ): Promise<TransitionResult<ActorContext<K>, ActorTag<K>> & { created: boolean }> {
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
    async sendIn<K extends ActorKindName>(tx: Tx, kind: K, id: string, event: ActorEvent<K>): Promise<{ result: TransitionResult<ActorContext<K>, ActorTag<K>> | null; afterCommit: () => void }> {
      const done = await step(tx, kind, id, event);
      return {
        result: (done?.result ?? null) as TransitionResult<ActorContext<K>, ActorTag<K>> | null,
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
    async fireTimer(row: WorkRow<ActorWork, "actor-timer">): Promise<TransitionResult | null> {
      return deliverHeld(row, row.id);
    },

    /** Delivers a durable message (`actor-message` work) to its actor, as `fireTimer` does. */
    async deliver(row: WorkRow<ActorWork, "actor-message">): Promise<TransitionResult | null> {
      return deliverHeld(row);
    },

    /** Ids of the actors of a kind that carry a tag. */
    async tagged<K extends ActorKindName>(kind: K, tag: ActorTag<K>): Promise<{ id: string; orgId: string }[]> {
      return database.db
        .select({ id: actorTags.actorId, orgId: actorTags.orgId })
        .from(actorTags)
        .where(and(eq(actorTags.kind, kind), eq(actorTags.tag, tag)));
    },

    /** How many actors of a kind carry a tag (all organizations, or one): one range of actor_tags' primary key. */
    countTagged<K extends ActorKindName>(kind: K, tag: ActorTag<K>, orgId?: string): Promise<number> {
      return countTagged(database.db, kind, tag, orgId);
    },

    /** An organization's live actors of a kind by status (index actors_kind_status_org), statuses in order. */
    async countByStatus(kind: ActorKindName, orgId: string): Promise<Array<{ status: string; count: number }>> {
      const rows = await database.db
        .select({ status: actors.status, count: sql<number>`count(*)` })
        .from(actors)
        .where(and(eq(actors.kind, kind), eq(actors.orgId, orgId), isNull(actors.deletedAt)))
        .groupBy(actors.status)
        .orderBy(actors.status);
      return rows.map((r) => ({ status: r.status, count: Number(r.count) }));
    },

    /**
     * Seals what rows stored before their kind's secrets were sealed still hold in plaintext (ActorKindSpec
     * `secrets`), in one write transaction; `within` runs there for each such row (the context opened), e.g. to
     * restore what an older version kept beside it. A read and nothing more when none is left. Answers how many.
     */
    async sealStoredSecrets(within?: (tx: Tx, row: PlaintextRow) => Promise<void>): Promise<number> {
      const found: Array<{ row: typeof actors.$inferSelect; sealer: ContextSealer }> = [];
      for (const [kind, sealer] of sealers) {
        // A string value of a declared field in the stored JSON: `"name":"` (JSON.stringify writes no spaces).
        const needles = secretLeaves(kinds[kind].secrets ?? []).map((leaf) => sql`instr(${actors.state}, ${`"${leaf}":"`}) > 0`);
        const rows = await database.db
          .select()
          .from(actors)
          .where(and(eq(actors.kind, kind), sql`(${sql.join(needles, sql` OR `)})`));
        for (const row of rows) if (sealer.hasPlaintext((row.state as Persisted).context)) found.push({ row, sealer });
      }
      if (found.length === 0) return 0;
      await database.write(async (tx) => {
        for (const { row, sealer } of found) {
          const st = row.state as Persisted;
          await tx
            .update(actors)
            .set({ state: { value: st.value, context: sealer.seal(st.context, row.id) } })
            .where(eq(actors.id, row.id));
          const context = sealer.open(st.context, row.id);
          await within?.(tx, { id: row.id, kind: row.kind as ActorKindName, orgId: row.orgId, createdAt: row.createdAt, deleted: row.deletedAt !== null, context });
        }
      });
      return found.length;
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
