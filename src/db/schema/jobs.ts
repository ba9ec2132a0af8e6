import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Background work with leases: any process pointed at the same database can
 * claim a row; a lease that expires (its process died) is claimed again.
 */
export const jobs = sqliteTable(
  "jobs",
  {
    id: text("id").primaryKey(),
    type: text("type").notNull(),
    orgId: text("org_id").notNull(),
    entityId: text("entity_id").notNull(),
    payload: text("payload", { mode: "json" }).notNull(),
    /** queued | running | done | failed | cancelled */
    status: text("status").notNull(),
    attempts: integer("attempts").notNull(),
    maxAttempts: integer("max_attempts").notNull(),
    claimedBy: text("claimed_by"),
    leaseUntil: integer("lease_until"),
    runAfter: integer("run_after").notNull(),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("jobs_claim").on(t.status, t.runAfter), index("jobs_entity").on(t.entityId), index("jobs_org_claim").on(t.orgId, t.status, t.runAfter)],
);

/**
 * Whose turn it is: per job type and organization, the sequence number of the
 * organization's last claim. A claim prefers the organization with the fewest
 * running jobs, then the one served longest ago (round-robin), so one
 * organization's long queue cannot starve another's. One row per type and
 * organization that ever ran a job.
 */
export const jobTurns = sqliteTable(
  "job_turns",
  {
    type: text("type").notNull(),
    orgId: text("org_id").notNull(),
    servedSeq: integer("served_seq").notNull(),
  },
  (t) => [primaryKey({ columns: [t.type, t.orgId] })],
);
