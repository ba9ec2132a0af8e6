import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * A registered receiver. The signing secret is stored sealed (AES-256-GCM
 * under a key derived from the server secret): the dispatcher needs the
 * plaintext to sign, so a hash would not do. Deleting sets `deleted_at`.
 */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    url: text("url").notNull(),
    events: text("events", { mode: "json" }).$type<string[]>().notNull(),
    fields: text("fields", { mode: "json" }).$type<string[]>().notNull(),
    description: text("description"),
    sealedSecret: text("sealed_secret").notNull(),
    createdAt: integer("created_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (t) => [
    index("webhook_endpoints_org").on(t.orgId, t.createdAt, t.id),
    // Retention: deleted endpoints past WEBHOOK_DELIVERY_RETENTION_MS (src/retention).
    index("webhook_endpoints_deleted").on(t.deletedAt).where(sql`deleted_at IS NOT NULL`),
  ],
);

/**
 * One event for one endpoint. `body` holds the exact bytes posted (trimmed by
 * the endpoint's `fields` when built), so every attempt sends the same thing
 * under the same id. status: pending | delivered | abandoned | dropped.
 * `attempts` counts the scheduled attempts (the retry schedule's position);
 * manual re-sends are only in `webhook_attempts`.
 *
 * `claimed_by` / `lease_until`: the dispatcher process (a random id per start)
 * that holds a pending delivery in memory and may attempt it, until when. A
 * process only sends what it holds; an expired lease can be claimed by any.
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    endpointId: text("endpoint_id").notNull(),
    orgId: text("org_id").notNull(),
    eventId: text("event_id").notNull(),
    event: text("event").notNull(),
    body: text("body").notNull(),
    test: integer("test", { mode: "boolean" }).notNull(),
    status: text("status").notNull(),
    attempts: integer("attempts").notNull(),
    nextAttemptAt: integer("next_attempt_at"),
    claimedBy: text("claimed_by"),
    leaseUntil: integer("lease_until"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    index("webhook_deliveries_due").on(t.nextAttemptAt).where(sql`status = 'pending'`),
    index("webhook_deliveries_endpoint").on(t.endpointId, t.createdAt, t.id),
    uniqueIndex("webhook_deliveries_event_endpoint").on(t.eventId, t.endpointId),
    // Retention: settled deliveries past WEBHOOK_DELIVERY_RETENTION_MS, one range per status (src/retention).
    index("webhook_deliveries_settled").on(t.status, t.createdAt),
  ],
);

/** Every POST made for a delivery and what came of it. */
export const webhookAttempts = sqliteTable(
  "webhook_attempts",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    deliveryId: text("delivery_id").notNull(),
    startedAt: integer("started_at").notNull(),
    durationMs: integer("duration_ms").notNull(),
    statusCode: integer("status_code"),
    error: text("error"),
    manual: integer("manual", { mode: "boolean" }).notNull(),
  },
  (t) => [index("webhook_attempts_delivery").on(t.deliveryId, t.seq)],
);
