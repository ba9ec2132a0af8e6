import { and, desc, eq, inArray, isNull, notInArray, sql } from "drizzle-orm";
import { olderThan } from "../db/keyset.ts";
import { initialTransition, transition, type AnyStateMachine } from "xstate";
import type { DomainEvent } from "../../machines/domain-event.ts";
import type { Database, Tx } from "../db/create-database.ts";
import { actors, outbox } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import type { Logger } from "../log.ts";

export interface ActorKindSpec {
  machine: AnyStateMachine;
  /** Maps a state value to the public status column. */
  statusOf(value: unknown): string;
  /** The stored form of a context (e.g. secrets sealed) and back; `id` is the actor's. Contexts are stored as they are without. */
  seal?(context: any, id: string): unknown;
  open?(stored: any, id: string): unknown;
}

export interface ActorRecord<C = any> {
  id: string;
  kind: string;
  orgId: string;
  status: string;
  value: unknown;
  context: C;
  createdAt: number;
  updatedAt: number;
  version: number;
}

export interface TransitionResult<C = any> {
  record: ActorRecord<C>;
  previousStatus: string | null;
  changed: boolean;
  events: DomainEvent[];
}

/** A page of `list`: keyset cursor plus optional filters. */
export interface ListPage {
  limit: number;
  cursor?: { createdAt: number; id: string };
  status?: readonly string[];
  contextKind?: string;
}

export type ActorListener = (result: TransitionResult, event: { type: string }) => void;

interface Persisted {
  value: unknown;
  context: unknown;
}

function emittedEvents(actions: readonly { type: string; params?: unknown }[]): DomainEvent[] {
  return actions
    .filter((a) => a.type === "xstate.emit")
    .map((a) => (a.params as { event: DomainEvent }).event)
    .filter((e) => e.type === "domain");
}

/**
 * Loads and persists actors. Every transition is computed with XState's pure
 * `transition()` inside a write transaction: the new snapshot and the domain
 * events it emitted are written together (transactional outbox), so a crash
 * can never keep one without the other. State lives in the database, not in
 * memory, so a restart (or a second process) picks up exactly where it was.
 */
export function createActorRuntime(opts: { database: Database; logger: Logger; kinds: Record<string, ActorKindSpec> }) {
  const { database, kinds } = opts;
  const listeners = new Set<ActorListener>();
  const outboxListeners = new Set<() => void>();

  function spec(kind: string): ActorKindSpec {
    const s = kinds[kind];
    if (!s) throw new Error(`Unknown actor kind ${kind}`);
    return s;
  }

  function toRecord(row: typeof actors.$inferSelect): ActorRecord {
    const st = row.state as Persisted;
    const open = kinds[row.kind]?.open;
    return {
      id: row.id,
      kind: row.kind,
      orgId: row.orgId,
      status: row.status,
      value: st.value,
      context: open ? open(st.context, row.id) : st.context,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      version: row.version,
    };
  }

  function stored(kind: string, id: string, state: Persisted): Persisted {
    const seal = spec(kind).seal;
    return seal ? { value: state.value, context: seal(state.context, id) } : state;
  }

  async function writeOutbox(tx: Tx, orgId: string, entityId: string, events: DomainEvent[], now: number) {
    if (events.length === 0) return;
    await tx.insert(outbox).values(events.map((e) => ({ id: newId("evt"), orgId, entityId, event: e.event, payload: e.data, createdAt: now })));
  }

  function notify(result: TransitionResult, event: { type: string }) {
    for (const l of listeners) {
      try {
        l(result, event);
      } catch (err) {
        opts.logger.error("Cannot run actor listener", { err, entity_id: result.record.id });
      }
    }
    if (result.events.length > 0) for (const l of outboxListeners) l();
  }

  return {
    database,
    /**
     * Creates an actor from its machine input. With a `dedupeKey`, an existing
     * live actor of the same organization, kind and key is returned instead.
     */
    async create<C>(
      kind: string,
      input: C & { id: string; orgId: string },
      options: { dedupeKey?: string; within?: (tx: Tx, record: ActorRecord<C>) => Promise<void> } = {},
    ): Promise<TransitionResult<C> & { created: boolean }> {
      const { machine, statusOf } = spec(kind);
      const result = await database.write(async (tx) => {
        if (options.dedupeKey) {
          const existing = await tx
            .select()
            .from(actors)
            .where(and(eq(actors.orgId, input.orgId), eq(actors.kind, kind), eq(actors.dedupeKey, options.dedupeKey), isNull(actors.deletedAt)))
            .limit(1);
          if (existing[0]) {
            const record = toRecord(existing[0]);
            return { record, previousStatus: record.status, changed: false, events: [], created: false };
          }
        }
        const [snapshot, actions] = initialTransition(machine, input);
        const now = Date.now();
        const status = statusOf(snapshot.value);
        const state: Persisted = { value: snapshot.value, context: snapshot.context };
        await tx
          .insert(actors)
          .values({ id: input.id, kind, orgId: input.orgId, status, state: stored(kind, input.id, state), dedupeKey: options.dedupeKey ?? null, version: 1, createdAt: now, updatedAt: now });
        const events = emittedEvents(actions as never);
        await writeOutbox(tx, input.orgId, input.id, events, now);
        const record: ActorRecord = { id: input.id, kind, orgId: input.orgId, status, value: snapshot.value, context: snapshot.context, createdAt: now, updatedAt: now, version: 1 };
        // Work that must commit or roll back with the creation (e.g. queueing its job).
        if (options.within) await options.within(tx, record);
        return { record, previousStatus: null, changed: true, events, created: true };
      });
      if (result.created) notify(result, { type: "xstate.init" });
      return result as TransitionResult<C> & { created: boolean };
    },

    /** Sends an event; returns null when the actor does not exist. Unhandled events change nothing. */
    async send<C = any>(
      kind: string,
      id: string,
      event: { type: string; [key: string]: unknown },
      options: { within?: (tx: Tx, result: TransitionResult<C>) => Promise<void> } = {},
    ): Promise<TransitionResult<C> | null> {
      const { machine, statusOf } = spec(kind);
      const result = await database.write(async (tx) => {
        const rows = await tx
          .select()
          .from(actors)
          .where(and(eq(actors.id, id), eq(actors.kind, kind)))
          .limit(1);
        const row = rows[0];
        if (!row) return null;
        const before = toRecord(row);
        const snapshot = machine.resolveState({ value: before.value as never, context: before.context });
        const [next, actions] = transition(machine, snapshot, event as never);
        const events = emittedEvents(actions as never);
        const state: Persisted = { value: next.value, context: next.context };
        const changed = events.length > 0 || JSON.stringify(state) !== JSON.stringify({ value: before.value, context: before.context });
        if (!changed) return { record: before, previousStatus: before.status, changed: false, events };
        const now = Date.now();
        const status = statusOf(next.value);
        await tx
          .update(actors)
          .set({ state: stored(kind, id, state), status, version: before.version + 1, updatedAt: now, deletedAt: status === "DELETED" ? now : null })
          .where(eq(actors.id, id));
        await writeOutbox(tx, before.orgId, id, events, now);
        const record: ActorRecord = { ...before, status, value: next.value, context: next.context, updatedAt: now, version: before.version + 1 };
        const result: TransitionResult = { record, previousStatus: before.status, changed: true, events };
        if (options.within) await options.within(tx, result);
        return result;
      });
      if (result?.changed) notify(result, event);
      return result as TransitionResult<C> | null;
    },

    /** Reads an actor of one organization: another organization's id is simply absent. */
    async get<C = any>(kind: string, id: string, orgId?: string): Promise<ActorRecord<C> | null> {
      const rows = await database.db
        .select()
        .from(actors)
        .where(and(eq(actors.id, id), eq(actors.kind, kind), isNull(actors.deletedAt)))
        .limit(1);
      const row = rows[0];
      if (!row || (orgId !== undefined && row.orgId !== orgId)) return null;
      return toRecord(row);
    },

    /**
     * One organization's actors of a kind, newest first. Optional filters: `status`
     * (any of, on the indexed status column) and `contextKind` (the stored
     * context's `kind`, e.g. a video's UPLOAD / LIVESTREAM_RECORDING); both are
     * `and`ed into the same keyset scan of the (org_id, kind, created_at, id) index.
     */
    async list<C = any>(kind: string, orgId: string, page: ListPage): Promise<ActorRecord<C>[]> {
      const c = page.cursor;
      const rows = await database.db
        .select()
        .from(actors)
        .where(
          and(
            eq(actors.orgId, orgId),
            eq(actors.kind, kind),
            isNull(actors.deletedAt),
            olderThan(actors.createdAt, actors.id, c),
            page.status?.length ? inArray(actors.status, [...page.status]) : undefined,
            page.contextKind !== undefined ? sql`json_extract(${actors.state}, '$.context.kind') = ${page.contextKind}` : undefined,
          ),
        )
        .orderBy(desc(actors.createdAt), desc(actors.id))
        .limit(page.limit);
      return rows.map(toRecord);
    },

    /** Actors not yet in a final status: what a restarted process must resume. */
    async unfinished<C = any>(kind: string, finalStatuses: string[]): Promise<ActorRecord<C>[]> {
      const rows = await database.db
        .select()
        .from(actors)
        .where(and(eq(actors.kind, kind), isNull(actors.deletedAt), notInArray(actors.status, finalStatuses)));
      return rows.map(toRecord);
    },

    subscribe(listener: ActorListener): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    /** Called after a commit that wrote outbox rows (wakes the dispatcher). */
    onOutbox(listener: () => void): () => void {
      outboxListeners.add(listener);
      return () => outboxListeners.delete(listener);
    },
  };
}

export type ActorRuntime = ReturnType<typeof createActorRuntime>;
