import { and, asc, eq, gt, inArray, lte, or, sql } from "drizzle-orm";
import type { Database, Tx } from "../db/create-database.ts";
import { jobTurns, jobs } from "../db/schema/index.ts";
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

    /**
     * Claims a runnable job of this type (queued, or running with an expired
     * lease), fairly between organizations: among organizations with work and
     * fewer than `perOrgLimit` jobs of this type running, the one with the
     * fewest running, then the one served longest ago (round-robin, remembered
     * in `job_turns` so every process takes turns in the same order), then the
     * one whose oldest job has waited longest; within it, oldest first.
     */
    async claim(type: string, claimOpts: { perOrgLimit?: number } = {}): Promise<JobRow | null> {
      const perOrgLimit = claimOpts.perOrgLimit ?? Infinity;
      const runnable = (t: number) => and(eq(jobs.type, type), inArray(jobs.status, ["queued", "running"]), lte(jobs.runAfter, t), or(eq(jobs.status, "queued"), lte(jobs.leaseUntil, t)));
      // A read first: an idle poll should not take the write lock every second.
      const any = await database.db.select({ id: jobs.id }).from(jobs).where(runnable(now())).limit(1);
      if (any.length === 0) return null;
      return database.write(async (tx) => {
        const t = now();
        const waiting = await tx
          .select({ orgId: jobs.orgId, first: sql<number>`min(${jobs.runAfter})` })
          .from(jobs)
          .where(runnable(t))
          .groupBy(jobs.orgId);
        if (waiting.length === 0) return null;
        const runningRows = await tx
          .select({ orgId: jobs.orgId, n: sql<number>`count(*)` })
          .from(jobs)
          .where(and(eq(jobs.type, type), eq(jobs.status, "running"), gt(jobs.leaseUntil, t)))
          .groupBy(jobs.orgId);
        const running = new Map(runningRows.map((r) => [r.orgId, Number(r.n)]));
        const turnRows = await tx.select().from(jobTurns).where(eq(jobTurns.type, type));
        const served = new Map(turnRows.map((r) => [r.orgId, r.servedSeq]));
        const order = waiting
          .map((w) => ({ orgId: w.orgId, first: Number(w.first), running: running.get(w.orgId) ?? 0, served: served.get(w.orgId) ?? 0 }))
          .filter((o) => o.running < perOrgLimit)
          .sort((a, b) => a.running - b.running || a.served - b.served || a.first - b.first);
        const pick = order[0];
        if (!pick) return null;
        const rows = await tx
          .select()
          .from(jobs)
          .where(and(runnable(t), eq(jobs.orgId, pick.orgId)))
          .orderBy(asc(jobs.runAfter), asc(jobs.createdAt))
          .limit(1);
        const row = rows[0];
        if (!row) return null;
        const claimed = { status: "running", claimedBy: workerId, leaseUntil: t + leaseMs, attempts: row.attempts + 1, updatedAt: t };
        await tx.update(jobs).set(claimed).where(eq(jobs.id, row.id));
        const seq = Math.max(0, ...turnRows.map((r) => r.servedSeq)) + 1;
        await tx
          .insert(jobTurns)
          .values({ type, orgId: row.orgId, servedSeq: seq })
          .onConflictDoUpdate({ target: [jobTurns.type, jobTurns.orgId], set: { servedSeq: seq } });
        return { ...row, ...claimed };
      });
    },

    /**
     * Hands a job we hold to its next stage in one write: same row, new type and
     * payload, queued again with fresh attempts (e.g. a fetched source entering
     * the transcode queue). False when the job was taken from us meanwhile.
     */
    async advance(id: string, next: { type: string; payload: unknown }): Promise<boolean> {
      return database.write(async (tx) => {
        const t = now();
        const res = await tx
          .update(jobs)
          .set({ type: next.type, payload: next.payload as object, status: "queued", claimedBy: null, leaseUntil: null, attempts: 0, runAfter: t, lastError: null, updatedAt: t })
          .where(and(eq(jobs.id, id), eq(jobs.claimedBy, workerId), eq(jobs.status, "running")))
          .returning({ id: jobs.id });
        return res.length > 0;
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
      await database.write((tx) =>
        tx
          .update(jobs)
          .set({ status, lastError: error ?? null, leaseUntil: null, updatedAt: now() })
          .where(eq(jobs.id, id)),
      );
    },

    /** Gives a job back for another attempt after `delayMs`. */
    async retry(id: string, delayMs: number, error: string): Promise<void> {
      await database.write((tx) =>
        tx
          .update(jobs)
          .set({ status: "queued", claimedBy: null, leaseUntil: null, runAfter: now() + delayMs, lastError: error, updatedAt: now() })
          .where(eq(jobs.id, id)),
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
      const rows = await database.db
        .select({ n: sql<number>`count(*)` })
        .from(jobs)
        .where(inArray(jobs.status, ["queued", "running"]));
      return Number(rows[0]?.n ?? 0);
    },
  };
}

export type JobQueue = ReturnType<typeof createJobQueue>;
