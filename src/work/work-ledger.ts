import { and, asc, desc, eq, gt, inArray, lte, ne, notExists, or, type SQL, sql } from "drizzle-orm";
import type { Database, Tx } from "../db/create-database.ts";
import { work, workTurns } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import { heldBy, leaseFree, renewLeases, type Claim } from "./lease.ts";
import type { WorkRegistry } from "./work-registry.ts";
import type { WorkMap, WorkRequest, WorkType } from "./work-types.ts";

type Row = typeof work.$inferSelect;
/** A work row of a payload map, with its payload typed by its type. */
export type WorkRow<P extends WorkMap = WorkMap, T extends WorkType<P> = WorkType<P>> = WorkRowOf<T, P[T]>;
/** A work row of type `T` with its payload. */
export type WorkRowOf<T extends string, Payload> = Omit<Row, "type" | "payload"> & { type: T; payload: Payload };

/** What to enqueue: the type's attempts are its declared policy's (the ledger applies them), never the caller's. */
export type EnqueueInput<P extends WorkMap> = WorkRequest<P> & {
  orgId: string;
  entityId: string;
  /** Not before this time (epoch ms); now by default. */
  runAfter?: number;
  /** At most one open row per key: a second enqueue with an open key replaces the first's schedule and payload. */
  dedupeKey?: string;
};

const OPEN = ["queued", "running"];

/** How `unavailable` marks `last_error`: `[infrastructure since <epoch ms>] <message>`. */
const INFRA_MARK = "[infrastructure since ";

/** When the row's current streak of infrastructure failures began (epoch ms), or null when its last failure was not one. */
export function infraSince(row: Pick<WorkRow, "lastError">): number | null {
  if (!row.lastError?.startsWith(INFRA_MARK)) return null;
  const at = Number(row.lastError.slice(INFRA_MARK.length, row.lastError.indexOf("]")));
  return Number.isFinite(at) && at > 0 ? at : null;
}
/**
 * The condition of the partial index \`work_dedupe\`, spelled as in the index
 * (literals, not bound parameters): SQLite uses a partial index only when the
 * query's WHERE contains the index's own terms, so a lookup by key with
 * \`status IN (?, ?)\` scanned the whole table (measured: 160 µs at 4,000 rows,
 * growing with it, on every timer armed or cancelled; bench/api.ts).
 */
const OPEN_ROW = sql`${work.status} IN ('queued', 'running')`;

/**
 * The work ledger (table `work`): enqueue in the caller's transaction, claim
 * fairly under a lease, and finish, retry, defer or advance only while the
 * claim is still ours. A process that lost its lease (stalled, and the row
 * was reclaimed; or the row was cancelled) changes nothing by finishing.
 */
export function createWorkLedger<P extends WorkMap>(opts: { database: Database; holder: string; leaseMs: number; work: WorkRegistry<P>; now?: () => number }) {
  const { database, holder, leaseMs, work: registry } = opts;
  const now = opts.now ?? Date.now;
  const mine = (id: string) => and(eq(work.id, id), heldBy(work, holder), eq(work.status, "running"));
  const claim = (): Claim => ({ by: holder, until: now() + leaseMs });

  /** A type with a lease affinity: its row's entity is not leased by another holder whose lease is alive at `t`. */
  const notHeldElsewhere = (type: string, t: number): SQL | undefined => {
    const affinity = registry.policy(type).affinity;
    if (!affinity) return undefined;
    const c = affinity.columns;
    return notExists(
      database.db
        .select({ one: sql`1` })
        .from(affinity.table)
        .where(and(eq(c.id, work.entityId), ne(c.claimedBy, holder), gt(c.leaseUntil, t))),
    );
  };
  const affine = registry.types.filter((type) => registry.policy(type).affinity);

  /** Queued and due, or running under a lapsed lease; for a type with a lease affinity, not leased elsewhere. */
  const runnable = (type: WorkType<P>, t: number) =>
    and(eq(work.type, type), inArray(work.status, OPEN), lte(work.runAfter, t), or(eq(work.status, "queued"), leaseFree(work, t)), notHeldElsewhere(type, t));

  async function settle(id: string, set: Partial<Row>): Promise<boolean> {
    return database.write(async (tx) => {
      const res = await tx
        .update(work)
        .set({ ...set, updatedAt: now() })
        .where(mine(id))
        .returning({ id: work.id });
      return res.length > 0;
    });
  }

  return {
    holder,
    leaseMs,
    /** The declared types and their policies this ledger enqueues by. */
    registry,

    async enqueue(tx: Tx, input: EnqueueInput<P>): Promise<string> {
      const t = now();
      const id = newId("wrk");
      const values = {
        id,
        type: input.type,
        orgId: input.orgId,
        entityId: input.entityId,
        payload: input.payload,
        status: "queued",
        attempts: 0,
        maxAttempts: registry.policy(input.type).maxAttempts,
        runAfter: input.runAfter ?? t,
        dedupeKey: input.dedupeKey ?? null,
        createdAt: t,
        updatedAt: t,
      };
      if (!input.dedupeKey) {
        await tx.insert(work).values(values);
        return id;
      }
      // One open row per key: an earlier queued one is rescheduled instead (a re-armed timer).
      const open = await tx
        .select({ id: work.id, status: work.status })
        .from(work)
        .where(and(eq(work.dedupeKey, input.dedupeKey), OPEN_ROW))
        .limit(1);
      if (open[0]?.status === "queued") {
        await tx.update(work).set({ payload: input.payload, runAfter: values.runAfter, updatedAt: t }).where(eq(work.id, open[0].id));
        return open[0].id;
      }
      if (open[0]) return open[0].id;
      await tx.insert(work).values(values);
      return id;
    },

    /** Makes a queued row (by its key) due at `at`. */
    async reschedule(tx: Tx, dedupeKey: string, at: number): Promise<void> {
      await tx
        .update(work)
        .set({ runAfter: at, updatedAt: now() })
        .where(and(eq(work.dedupeKey, dedupeKey), OPEN_ROW, eq(work.status, "queued")));
    },

    /**
     * Cancels the open row of a key (a timer whose state was left): a queued
     * one is deleted; a running one (claimed, about to fire) is marked
     * cancelled so its holder no longer `holds` it and it does nothing.
     * `except` is the row whose own transition asks (a timer firing cancels
     * its own send id on leaving its state): it finishes normally.
     */
    async cancelKey(tx: Tx, dedupeKey: string, except?: string): Promise<void> {
      await tx.delete(work).where(and(eq(work.dedupeKey, dedupeKey), OPEN_ROW, eq(work.status, "queued")));
      const t = now();
      await tx
        .update(work)
        .set({ status: "cancelled", leaseUntil: null, finishedAt: t, updatedAt: t })
        .where(and(eq(work.dedupeKey, dedupeKey), OPEN_ROW, eq(work.status, "running"), except ? ne(work.id, except) : undefined));
    },

    /** Cancels an entity's open work of the given types (all types by default); its holder sees the lease gone. */
    async cancelForEntity(tx: Tx, entityId: string, types?: WorkType<P>[]): Promise<number> {
      const t = now();
      const res = await tx
        .update(work)
        .set({ status: "cancelled", leaseUntil: null, finishedAt: t, updatedAt: t })
        .where(and(eq(work.entityId, entityId), inArray(work.status, OPEN), types ? inArray(work.type, types) : undefined))
        .returning({ id: work.id });
      return res.length;
    },

    /**
     * Claims a runnable row of `type` fairly between organizations: among
     * organizations with work and fewer than `perOrgLimit` rows of this type
     * running, the one with the fewest running, then the one served longest
     * ago (round-robin, remembered in `work_turns` so every process takes
     * turns in the same order), then the one whose oldest row waited longest;
     * within it, oldest first.
     */
    async claim<T extends WorkType<P>>(type: T, claimOpts: { perOrgLimit?: number } = {}): Promise<WorkRow<P, T> | null> {
      const perOrgLimit = claimOpts.perOrgLimit ?? Number.POSITIVE_INFINITY;
      // A read first: an idle poll should not take the write lock.
      const any = await database.db.select({ id: work.id }).from(work).where(runnable(type, now())).limit(1);
      if (any.length === 0) return null;
      return database.write(async (tx) => {
        const t = now();
        const waiting = await tx
          .select({ orgId: work.orgId, first: sql<number>`min(${work.runAfter})` })
          .from(work)
          .where(runnable(type, t))
          .groupBy(work.orgId);
        if (waiting.length === 0) return null;
        const runningRows = await tx
          .select({ orgId: work.orgId, n: sql<number>`count(*)` })
          .from(work)
          .where(and(eq(work.type, type), eq(work.status, "running"), gt(work.leaseUntil, t)))
          .groupBy(work.orgId);
        const running = new Map(runningRows.map((r) => [r.orgId, Number(r.n)]));
        const turnRows = await tx.select().from(workTurns).where(eq(workTurns.type, type));
        const served = new Map(turnRows.map((r) => [r.orgId, r.servedSeq]));
        const order = waiting
          .map((w) => ({ orgId: w.orgId, first: Number(w.first), running: running.get(w.orgId) ?? 0, served: served.get(w.orgId) ?? 0 }))
          .filter((o) => o.running < perOrgLimit)
          .sort((a, b) => a.running - b.running || a.served - b.served || a.first - b.first);
        const pick = order[0];
        if (!pick) return null;
        const rows = await tx
          .select()
          .from(work)
          .where(and(runnable(type, t), eq(work.orgId, pick.orgId)))
          .orderBy(asc(work.runAfter), asc(work.createdAt))
          .limit(1);
        const row = rows[0];
        if (!row) return null;
        // The lease runs from now, not from `t`: on a libSQL server the transaction waited for the write lock at its first
        // statement, after `t` was read (a writer killed mid-transaction holds it for seconds), and a lease counted from
        // before that wait could already have lapsed when it committed: another claim took the row at once (a double run).
        const takenAt = now();
        const claimed = { status: "running", claimedBy: holder, leaseUntil: takenAt + leaseMs, attempts: row.attempts + 1, updatedAt: takenAt };
        await tx.update(work).set(claimed).where(eq(work.id, row.id));
        const seq = Math.max(0, ...turnRows.map((r) => r.servedSeq)) + 1;
        await tx
          .insert(workTurns)
          .values({ type, orgId: row.orgId, servedSeq: seq })
          .onConflictDoUpdate({ target: [workTurns.type, workTurns.orgId], set: { servedSeq: seq } });
        return { ...row, ...claimed } as WorkRow<P, T>;
      });
    },

    /** Extends our leases on `ids`; answers those still ours and running. */
    async renew(ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      return database.write(async (tx) => {
        // The new lease counts from after the write lock is ours (see claim): one statement first, where a server transaction waits for it.
        await tx.run(sql`SELECT 1`);
        return renewLeases(tx, work, work, ids, claim(), eq(work.status, "running"));
      });
    },

    /**
     * Done; false when the row was no longer ours. `within` runs in the same transaction once the row is ours and
     * done (the fact the work reports to its actor, e.g. a fetched source's SOURCE_READY): the row's end and what it
     * causes commit together, so a crash between the two can neither run the work again nor lose its report.
     */
    async finish(id: string, within?: (tx: Tx) => Promise<void>): Promise<boolean> {
      if (!within) return settle(id, { status: "done", leaseUntil: null, finishedAt: now() });
      return database.write(async (tx) => {
        const t = now();
        const res = await tx.update(work).set({ status: "done", leaseUntil: null, finishedAt: t, updatedAt: t }).where(mine(id)).returning({ id: work.id });
        if (res.length === 0) return false;
        await within(tx);
        return true;
      });
    },

    /**
     * Failed for good (`error` kept for the logs and the operator). `within` runs in the same transaction once the
     * row is ours and failed (telling the actor the work failed): the failure and its consequence commit together,
     * so no crash or database error between the two can leave the actor waiting for work that no longer exists.
     */
    async fail<R>(id: string, error: string, within?: (tx: Tx) => Promise<R>): Promise<{ failed: boolean; result?: R }> {
      return database.write(async (tx) => {
        const t = now();
        const res = await tx
          .update(work)
          .set({ status: "failed", lastError: error.slice(0, 2000), leaseUntil: null, finishedAt: t, updatedAt: t })
          .where(mine(id))
          .returning({ id: work.id });
        if (res.length === 0) return { failed: false };
        return { failed: true, result: within ? await within(tx) : undefined };
      });
    },

    /** Back to the queue for another attempt after `delayMs`. */
    retry: (id: string, delayMs: number, error: string) => settle(id, { status: "queued", claimedBy: null, leaseUntil: null, runAfter: now() + delayMs, lastError: error.slice(0, 2000) }),

    /**
     * Back to the queue after `delayMs` without spending an attempt, because our own infrastructure failed (a
     * database, bucket or disk outage: src/infrastructure-failure.ts). `since` (epoch ms) is when this streak of
     * such failures began; it is kept in `last_error` (`infraSince` reads it back) so every process measures the
     * same INFRA_RETRY_WINDOW_SECONDS, without a column of its own.
     */
    async unavailable(id: string, delayMs: number, error: string, since: number): Promise<boolean> {
      return database.write(async (tx) => {
        const res = await tx
          .update(work)
          .set({
            status: "queued",
            claimedBy: null,
            leaseUntil: null,
            runAfter: now() + delayMs,
            attempts: sql`max(0, ${work.attempts} - 1)`,
            lastError: `${INFRA_MARK}${since}] ${error}`.slice(0, 2000),
            updatedAt: now(),
          })
          .where(mine(id))
          .returning({ id: work.id });
        return res.length > 0;
      });
    },

    /** Back to the queue without spending an attempt (it could not run here yet, e.g. another process holds what it needs). */
    async defer(id: string, delayMs: number): Promise<boolean> {
      return database.write(async (tx) => {
        const res = await tx
          .update(work)
          .set({ status: "queued", claimedBy: null, leaseUntil: null, runAfter: now() + delayMs, attempts: sql`max(0, ${work.attempts} - 1)`, updatedAt: now() })
          .where(mine(id))
          .returning({ id: work.id });
        return res.length > 0;
      });
    },

    /**
     * Hands a row we hold to its next stage in one write: same row, new type
     * and payload, queued again with fresh attempts (a fetched source entering
     * the transcode queue), with the next type's declared attempts.
     */
    advance: (id: string, next: WorkRequest<P>) =>
      settle(id, {
        type: next.type,
        payload: next.payload,
        status: "queued",
        claimedBy: null,
        leaseUntil: null,
        attempts: 0,
        maxAttempts: registry.policy(next.type).maxAttempts,
        runAfter: now(),
        lastError: null,
      }),

    /** Is this row still ours (inside a transaction that acts on its behalf, e.g. firing a timer)? */
    async holds(tx: Tx, id: string): Promise<boolean> {
      const rows = await tx.select({ id: work.id }).from(work).where(mine(id)).limit(1);
      return rows.length > 0;
    },

    async get(id: string): Promise<WorkRow<P> | null> {
      const rows = await database.db.select().from(work).where(eq(work.id, id)).limit(1);
      return (rows[0] as WorkRow<P> | undefined) ?? null;
    },

    /** When the earliest queued row falls due (epoch ms), or null when none is queued. */
    async nextDue(): Promise<number | null> {
      const t = now();
      const rows = await database.db
        .select({ at: sql<number | null>`min(${work.runAfter})` })
        .from(work)
        // A literal, as in the partial index \`work_due\` (see OPEN_ROW): one step down that index, not a scan.
        // Rows that run where another process's lease is held are that process's to claim: not a reason to wake here.
        .where(and(sql`${work.status} = 'queued'`, ...affine.map((type) => or(ne(work.type, type), notHeldElsewhere(type, t)))));
      return rows[0]?.at ?? null;
    },

    /** An entity's newest row of one type, whatever its status (a failed transcode's source, to try it again). */
    async latest<T extends WorkType<P>>(entityId: string, type: T): Promise<WorkRow<P, T> | null> {
      const rows = await database.db
        .select()
        .from(work)
        .where(and(eq(work.entityId, entityId), eq(work.type, type)))
        .orderBy(desc(work.createdAt))
        .limit(1);
      return (rows[0] as WorkRow<P, T> | undefined) ?? null;
    },

    /** An entity's open rows of the given types. */
    async openFor(entityId: string, types: WorkType<P>[]): Promise<number> {
      const rows = await database.db
        .select({ n: sql<number>`count(*)` })
        .from(work)
        .where(and(eq(work.entityId, entityId), inArray(work.status, OPEN), inArray(work.type, types)));
      return Number(rows[0]?.n ?? 0);
    },

    /** Open rows of the given types (the transcode queue's length). */
    async countOpen(types: WorkType<P>[], tx: Tx | Database["db"] = database.db): Promise<number> {
      const rows = await tx
        .select({ n: sql<number>`count(*)` })
        .from(work)
        .where(and(inArray(work.type, types), inArray(work.status, OPEN)));
      return Number(rows[0]?.n ?? 0);
    },
  };
}

/** A ledger over payload map `P`; a module takes `WorkLedger<ItsWork>` and is given the service's (every map includes its own). */
export type WorkLedger<P extends WorkMap = WorkMap> = ReturnType<typeof createWorkLedger<P>>;

/**
 * What a module does with the ledger, typed by its own payload map: enqueue its types (with their declared
 * attempts), reschedule, cancel, count. Claiming and settling rows is the runner's. The service's ledger, over
 * every module's map, is a `WorkQueue` of each.
 */
export type WorkQueue<P extends WorkMap> = Pick<WorkLedger<P>, "holder" | "enqueue" | "reschedule" | "cancelKey" | "cancelForEntity" | "holds" | "latest" | "openFor" | "countOpen">;
