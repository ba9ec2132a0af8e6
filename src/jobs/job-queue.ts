import { and, asc, eq, inArray, lte, or, sql } from "drizzle-orm";
import type { Database, Tx } from "../db/create-database.ts";
import { jobs } from "../db/schema/index.ts";
import { newId } from "../ids.ts";

export type JobRow = typeof jobs.$inferSelect;

export interface EnqueueInput {
  type: string;
  orgId: string;
  entityId: string;
  payload: unknown;
  maxAttempts?: number;
}

/**
 * The lease-based job table. `enqueue` takes a transaction so a job is queued
 * atomically with the state change that asked for it.
 */
export function createJobQueue(opts: { database: Database; workerId: string; leaseMs?: number; now?: () => number }) {
  const { database, workerId } = opts;
  const leaseMs = opts.leaseMs ?? 30_000;
  const now = opts.now ?? Date.now;

  return {
    workerId,
    leaseMs,

    async enqueue(tx: Tx, input: EnqueueInput): Promise<string> {
      const id = newId("job");
      const t = now();
      await tx.insert(jobs).values({
        id,
        type: input.type,
        orgId: input.orgId,
        entityId: input.entityId,
        payload: input.payload as object,
        status: "queued",
        attempts: 0,
        maxAttempts: input.maxAttempts ?? 3,
        runAfter: t,
        createdAt: t,
        updatedAt: t,
      });
      return id;
    },

    /** Claims the oldest runnable job of these types: queued, or running with an expired lease. */
    async claim(types: string[]): Promise<JobRow | null> {
      const runnable = (t: number) =>
        and(inArray(jobs.type, types), lte(jobs.runAfter, t), or(eq(jobs.status, "queued"), and(eq(jobs.status, "running"), lte(jobs.leaseUntil, t))));
      // A read first: an idle poll should not take the write lock every second.
      const any = await database.db.select({ id: jobs.id }).from(jobs).where(runnable(now())).limit(1);
      if (any.length === 0) return null;
      return database.write(async (tx) => {
        const t = now();
        const rows = await tx.select().from(jobs).where(runnable(t)).orderBy(asc(jobs.runAfter), asc(jobs.createdAt)).limit(1);
        const row = rows[0];
        if (!row) return null;
        const claimed = { status: "running", claimedBy: workerId, leaseUntil: t + leaseMs, attempts: row.attempts + 1, updatedAt: t };
        await tx.update(jobs).set(claimed).where(eq(jobs.id, row.id));
        return { ...row, ...claimed };
      });
    },

    /** Extends the lease; false when the job was taken from us (cancelled, or reclaimed after expiry). */
    async heartbeat(id: string): Promise<boolean> {
      return database.write(async (tx) => {
        const t = now();
        const res = await tx
          .update(jobs)
          .set({ leaseUntil: t + leaseMs, updatedAt: t })
          .where(and(eq(jobs.id, id), eq(jobs.claimedBy, workerId), eq(jobs.status, "running")))
          .returning({ id: jobs.id });
        return res.length > 0;
      });
    },

    async finish(id: string, status: "done" | "failed", error?: string): Promise<void> {
      await database.write((tx) => tx.update(jobs).set({ status, lastError: error ?? null, leaseUntil: null, updatedAt: now() }).where(eq(jobs.id, id)));
    },

    /** Gives a job back for another attempt after `delayMs`. */
    async retry(id: string, delayMs: number, error: string): Promise<void> {
      await database.write((tx) =>
        tx.update(jobs).set({ status: "queued", claimedBy: null, leaseUntil: null, runAfter: now() + delayMs, lastError: error, updatedAt: now() }).where(eq(jobs.id, id)),
      );
    },

    async cancelForEntity(tx: Tx, entityId: string): Promise<number> {
      const res = await tx
        .update(jobs)
        .set({ status: "cancelled", leaseUntil: null, updatedAt: now() })
        .where(and(eq(jobs.entityId, entityId), inArray(jobs.status, ["queued", "running"])))
        .returning({ id: jobs.id });
      return res.length;
    },

    async get(id: string): Promise<JobRow | null> {
      const rows = await database.db.select().from(jobs).where(eq(jobs.id, id)).limit(1);
      return rows[0] ?? null;
    },

    async countActive(): Promise<number> {
      const rows = await database.db.select({ n: sql<number>`count(*)` }).from(jobs).where(inArray(jobs.status, ["queued", "running"]));
      return Number(rows[0]?.n ?? 0);
    },
  };
}

export type JobQueue = ReturnType<typeof createJobQueue>;
