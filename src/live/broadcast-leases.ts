import { and, eq, inArray, lte } from "drizzle-orm";
import type { Database, Tx } from "../db/create-database.ts";
import { broadcasts } from "../db/schema/index.ts";
import { type LeaseColumns, renewLeases } from "../work/lease.ts";

export type BroadcastLease = typeof broadcasts.$inferSelect;

const columns: LeaseColumns = { id: broadcasts.streamId, claimedBy: broadcasts.claimedBy, leaseUntil: broadcasts.leaseUntil };

/**
 * Broadcast ownership as leased rows (table `broadcasts`): the process whose
 * RTMP server holds a stream's publisher owns its broadcast and renews the
 * lease while it does. Nobody else acts on a broadcast whose owner's lease is
 * alive; a lapsed lease means the owner died: an encoder coming back to
 * any process within the stream's reconnect window takes the broadcast over
 * (`acquire`), else the `live-watch` work has it finalized from what is stored.
 */
export function createBroadcastLeases(opts: { database: Database; holder: string; leaseMs: number }) {
  const { database, holder, leaseMs } = opts;

  return {
    holder,
    leaseMs,

    /**
     * Takes (or keeps) the broadcast for this process, in the caller's
     * transaction. Refused (false) while another process's lease is alive.
     * A lapsed lease of another process (it died: kill -9, a lost machine)
     * is taken over (`takenFrom`: its row as read) by a compare-and-set on
     * the holder and expiry read, so of processes racing for it exactly one
     * wins; the files of its broadcast are continued, not restarted (issue 26).
     */
    async acquire(tx: Tx, streamId: string, orgId: string, now = Date.now()): Promise<{ ok: boolean; lease: BroadcastLease; takenFrom?: BroadcastLease }> {
      const rows = await tx.select().from(broadcasts).where(eq(broadcasts.streamId, streamId)).limit(1);
      const current = rows[0];
      const lease: BroadcastLease = { streamId, orgId, claimedBy: holder, leaseUntil: now + leaseMs, startedAt: current?.startedAt ?? now, leftAt: null };
      if (!current) {
        await tx.insert(broadcasts).values(lease);
        return { ok: true, lease };
      }
      if (current.claimedBy === holder) {
        await tx.update(broadcasts).set({ leaseUntil: lease.leaseUntil, leftAt: null }).where(eq(broadcasts.streamId, streamId));
        return { ok: true, lease };
      }
      if (current.leaseUntil > now) return { ok: false, lease: current };
      const taken = await tx
        .update(broadcasts)
        .set({ claimedBy: holder, leaseUntil: lease.leaseUntil, leftAt: null })
        .where(and(eq(broadcasts.streamId, streamId), eq(broadcasts.claimedBy, current.claimedBy), eq(broadcasts.leaseUntil, current.leaseUntil)))
        .returning({ id: broadcasts.streamId });
      return taken.length === 1 ? { ok: true, lease, takenFrom: current } : { ok: false, lease: current };
    },

    /** The publisher left (the reconnect window starts): remembered for a duration computed by another process. */
    async markLeft(streamId: string, at = Date.now()): Promise<void> {
      await database.write((tx) =>
        tx
          .update(broadcasts)
          .set({ leftAt: at })
          .where(and(eq(broadcasts.streamId, streamId), eq(broadcasts.claimedBy, holder))),
      );
    },

    async get(streamId: string): Promise<BroadcastLease | null> {
      const rows = await database.db.select().from(broadcasts).where(eq(broadcasts.streamId, streamId)).limit(1);
      return rows[0] ?? null;
    },

    /** Renews our leases on `streamIds`; answers those still ours. */
    renew(streamIds: string[]): Promise<Set<string>> {
      return database.write((tx) => renewLeases(tx, broadcasts, columns, streamIds, { by: holder, until: Date.now() + leaseMs }));
    },

    /** The broadcast is finalized: its row goes, in the transaction that told the stream. */
    async release(tx: Tx, streamId: string): Promise<void> {
      await tx.delete(broadcasts).where(eq(broadcasts.streamId, streamId));
    },

    /**
     * At a graceful stop: our leases end now instead of lapsing later, so the
     * next process (or this one restarted) finalizes these broadcasts at once.
     */
    async surrender(tx: Tx, streamIds: string[], now = Date.now()): Promise<void> {
      if (streamIds.length === 0) return;
      await tx
        .update(broadcasts)
        .set({ leaseUntil: now })
        .where(and(inArray(broadcasts.streamId, streamIds), eq(broadcasts.claimedBy, holder)));
    },

    /** Whether the lease on `streamId` lapsed by `now` (inside the transaction that acts on it). */
    async lapsed(tx: Tx, streamId: string, now = Date.now()): Promise<boolean> {
      const rows = await tx
        .select({ id: broadcasts.streamId })
        .from(broadcasts)
        .where(and(eq(broadcasts.streamId, streamId), lte(broadcasts.leaseUntil, now)))
        .limit(1);
      return rows.length > 0;
    },
  };
}

export type BroadcastLeases = ReturnType<typeof createBroadcastLeases>;
