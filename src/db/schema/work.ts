import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * The work ledger: every side effect the service owes (a transcode, a source
 * fetch, a live broadcast's finalization, an actor's delayed event, a message
 * from one actor to another, a retention sweep) is a row, written in the same
 * transaction as the state change that asked for it. Any process pointed at
 * the database claims due rows under a lease; a lease that lapses (its
 * process died) is claimed again. Finished rows are deleted by retention
 * (`WORK_RETENTION_MS`, index `work_finished`).
 */
export const work = sqliteTable(
  "work",
  {
    id: text("id").primaryKey(),
    type: text("type").notNull(),
    orgId: text("org_id").notNull(),
    entityId: text("entity_id").notNull(),
    payload: text("payload", { mode: "json" }).$type<unknown>().notNull(),
    /** queued | running | done | failed | cancelled */
    status: text("status").notNull(),
    attempts: integer("attempts").notNull(),
    maxAttempts: integer("max_attempts").notNull(),
    claimedBy: text("claimed_by"),
    leaseUntil: integer("lease_until"),
    runAfter: integer("run_after").notNull(),
    lastError: text("last_error"),
    /** At most one open (queued or running) row per key: an actor's timer (`timer:<actor>:<send id>`), a singleton sweep. */
    dedupeKey: text("dedupe_key"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (t) => [
    index("work_claim").on(t.type, t.status, t.runAfter),
    // When the next queued row falls due, across types: the runner sleeps until then.
    index("work_due").on(t.runAfter).where(sql`status = 'queued'`),
    index("work_org_claim").on(t.type, t.orgId, t.status, t.runAfter),
    index("work_entity").on(t.entityId, t.status),
    index("work_finished").on(t.finishedAt).where(sql`finished_at IS NOT NULL`),
    uniqueIndex("work_dedupe").on(t.dedupeKey).where(sql`dedupe_key IS NOT NULL AND status IN ('queued', 'running')`),
  ],
);

/**
 * Whose turn it is: per work type and organization, the sequence number of
 * the organization's last claim. A claim prefers the organization with the
 * fewest running rows, then the one served longest ago (round-robin), so one
 * organization's long queue cannot starve another's. One row per type and
 * organization that ever ran work: bounded by types × organizations, so no retention is needed.
 */
export const workTurns = sqliteTable(
  "work_turns",
  {
    type: text("type").notNull(),
    orgId: text("org_id").notNull(),
    servedSeq: integer("served_seq").notNull(),
  },
  (t) => [uniqueIndex("work_turns_type_org").on(t.type, t.orgId)],
);
