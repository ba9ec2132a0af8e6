import { and, asc, eq, gt, inArray, isNull, lt, max } from "drizzle-orm";
import type { ResultSet } from "@libsql/client";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type { Database, Db, Schema, Tx } from "../db/create-database.ts";
import { outbox } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import { type EventSealer, plainEvents } from "../secrets/event-sealer.ts";

/** One stored domain event; `payload` as stored (sealed), `open` it to read it. */
export type OutboxRow = typeof outbox.$inferSelect;

/** An event to append: written by the transition (or request) whose transaction is given. */
export interface NewEvent {
  orgId: string;
  entityId: string;
  event: string;
  data: unknown;
  /** Nobody fans it out (no subscription, or a sample for listeners only): written already fanned out. */
  fannedOut?: boolean;
}

/**
 * The outbox: domain events written in the transaction of the change that
 * caused them, read in order by `seq` (webhook fan-out, `cli listen`, tests),
 * marked once fanned out to deliveries, and pruned by retention once fanned
 * out long enough. The only module that names the table's columns; payloads
 * are sealed on the way in and opened on the way out (src/secrets/event-sealer.ts).
 */
export function createOutbox(deps: { database: Database; events?: EventSealer }) {
  const { database } = deps;
  const sealer = deps.events ?? plainEvents;
  return {
    /** Writes the events in `tx`, in order; answers their ids and sequence numbers. */
    async append(tx: Tx, events: readonly NewEvent[], now = Date.now()): Promise<Array<{ id: string; seq: number }>> {
      if (events.length === 0) return [];
      const rows = events.map((e) => {
        const id = newId("evt");
        return { id, orgId: e.orgId, entityId: e.entityId, event: e.event, payload: sealer.sealPayload(e.data, id), createdAt: now, fannedOutAt: e.fannedOut ? now : null };
      });
      return tx.insert(outbox).values(rows).returning({ id: outbox.id, seq: outbox.seq });
    },

    /**
     * Rows after `seq`, oldest first: of one organization (`orgId`, index outbox_org_seq), or not yet fanned out
     * (`pending`, index outbox_pending; in `tx` when given, so the fan-out reads what it marks).
     */
    async readAfter(seq: number, o: { orgId?: string; pending?: boolean; limit: number; tx?: Tx }): Promise<OutboxRow[]> {
      const q: Db | Tx = o.tx ?? database.db;
      const where = and(gt(outbox.seq, seq), o.orgId === undefined ? undefined : eq(outbox.orgId, o.orgId), o.pending ? isNull(outbox.fannedOutAt) : undefined);
      return q.select().from(outbox).where(where).orderBy(asc(outbox.seq)).limit(o.limit);
    },

    /** Whether any row waits for the fan-out: a read, so an idle poll takes no write lock. */
    async hasPending(): Promise<boolean> {
      return (await database.db.select({ seq: outbox.seq }).from(outbox).where(isNull(outbox.fannedOutAt)).limit(1)).length > 0;
    },

    /** The newest seq of an organization (0 when none): where a new listener starts. */
    async lastSeq(orgId: string): Promise<number> {
      const [row] = await database.db
        .select({ seq: max(outbox.seq) })
        .from(outbox)
        .where(eq(outbox.orgId, orgId));
      return row?.seq ?? 0;
    },

    /** An entity's events, oldest first, opened (tools and tests). */
    async ofEntity(entityId: string): Promise<Array<{ id: string; seq: number; event: string; createdAt: number; data: any }>> {
      const rows = await database.db.select().from(outbox).where(eq(outbox.entityId, entityId)).orderBy(asc(outbox.seq));
      return rows.map((r) => ({ id: r.id, seq: r.seq, event: r.event, createdAt: r.createdAt, data: sealer.openPayload(r.payload, r.id) }));
    },

    /** Marks rows fanned out in the fan-out's transaction. */
    async markFannedOut(tx: Tx, seqs: readonly number[], now = Date.now()): Promise<void> {
      if (seqs.length === 0) return;
      await tx
        .update(outbox)
        .set({ fannedOutAt: now })
        .where(inArray(outbox.seq, [...seqs]));
    },

    /** A row's payload opened; throws when it was sealed under another secret. */
    open(row: OutboxRow): Record<string, unknown> {
      return sealer.openPayload(row.payload, row.id);
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;

/**
 * Retention's part (src/retention/retention-rules.ts): rows fanned out before `cutoff`, and their delete.
 * `fanned_out_at < ?` leaves out NULL (not yet fanned out): one range of index outbox_pending.
 */
/** The reader or a transaction (retention runs its statements on either). */
type Q = BaseSQLiteDatabase<"async", ResultSet, Schema>;

export const prune = {
  candidates: (q: Q, cutoff: number, limit: number) => q.select({ key: outbox.seq }).from(outbox).where(lt(outbox.fannedOutAt, cutoff)).limit(limit),
  delete: (q: Q, seqs: readonly number[], cutoff: number) => q.delete(outbox).where(and(inArray(outbox.seq, [...seqs]), lt(outbox.fannedOutAt, cutoff))),
};
