import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Times are epoch milliseconds: cheap to compare, turned into ISO strings at the edge. */
export const organizations = sqliteTable("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  settings: text("settings", { mode: "json" }).notNull(),
  createdAt: integer("created_at").notNull(),
});

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id")
      .notNull()
      .references(() => organizations.id),
    prefix: text("prefix").notNull(),
    secretHash: text("secret_hash").notNull(),
    name: text("name").notNull(),
    createdAt: integer("created_at").notNull(),
    revokedAt: integer("revoked_at"),
    expiresAt: integer("expires_at"),
    /** Written at most once a minute per key (src/http/authenticate.ts), shown on the settings screen. */
    lastUsedAt: integer("last_used_at"),
  },
  (t) => [
    uniqueIndex("api_keys_prefix").on(t.prefix),
    // The database itself guarantees "one live key per organization".
    uniqueIndex("api_keys_one_live_per_org").on(t.orgId).where(sql`revoked_at IS NULL`),
  ],
);

/**
 * One row per video or live stream actor: the machine's persisted state plus the
 * columns the API filters on. `dedupe_key` makes registration idempotent
 * (e.g. a video's source_url) within one organization and kind.
 */
export const actors = sqliteTable(
  "actors",
  {
    id: text("id").primaryKey(),
    kind: text("kind").notNull(),
    orgId: text("org_id").notNull(),
    status: text("status").notNull(),
    state: text("state", { mode: "json" }).notNull(),
    dedupeKey: text("dedupe_key"),
    /** Row version: +1 per stored transition. */
    version: integer("version").notNull(),
    /** The version of the machine definition the stored state belongs to (ActorKind.version); older rows are migrated on read, newer refused. */
    machineVersion: integer("machine_version").notNull().default(1),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (t) => [
    index("actors_org_kind_created").on(t.orgId, t.kind, t.createdAt, t.id),
    // Retention's and the start-up upgrade's scans by kind and status (slot counts use actor_tags).
    index("actors_kind_status_org").on(t.kind, t.status, t.orgId).where(sql`deleted_at IS NULL`),
    // The start-up upgrade finds rows of an older machine version without reading the others.
    index("actors_kind_machine_version").on(t.kind, t.machineVersion).where(sql`deleted_at IS NULL`),
    uniqueIndex("actors_dedupe").on(t.orgId, t.kind, t.dedupeKey).where(sql`dedupe_key IS NOT NULL AND deleted_at IS NULL`),
    // Retention: soft-deleted actors past DELETED_ACTOR_RETENTION_MS, oldest first (src/retention).
    index("actors_deleted").on(t.deletedAt).where(sql`deleted_at IS NOT NULL`),
  ],
);

/**
 * The XState state tags of each actor's current state (`holdsSlot`, `onAir`,
 * `settled` …), rewritten in the transaction of every transition that changes
 * them. Services ask by tag instead of repeating lists of statuses; every
 * question is one range of the primary key.
 */
export const actorTags = sqliteTable(
  "actor_tags",
  {
    kind: text("kind").notNull(),
    tag: text("tag").notNull(),
    orgId: text("org_id").notNull(),
    actorId: text("actor_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.tag, t.orgId, t.actorId] }), index("actor_tags_actor").on(t.actorId)],
);

/** Domain events written in the same transaction as the state change that caused them. */
export const outbox = sqliteTable(
  "outbox",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull(),
    orgId: text("org_id").notNull(),
    entityId: text("entity_id").notNull(),
    event: text("event").notNull(),
    payload: text("payload", { mode: "json" }).notNull(),
    createdAt: integer("created_at").notNull(),
    /** Set once the webhook dispatcher has turned the row into deliveries. */
    fannedOutAt: integer("fanned_out_at"),
  },
  (t) => [
    uniqueIndex("outbox_id").on(t.id),
    index("outbox_pending").on(t.fannedOutAt, t.seq),
    // `cli listen` (issue 16) follows one organization's events by sequence.
    index("outbox_org_seq").on(t.orgId, t.seq),
  ],
);

/**
 * Rate-limit windows: the `memory` store flushes its counts here so a restart
 * does not hand out a fresh allowance; the `database` store decides every
 * request here (exact across processes). One row per key.
 */
export const rateLimits = sqliteTable(
  "rate_limits",
  {
    key: text("key").primaryKey(),
    windowStart: integer("window_start").notNull(),
    count: integer("count").notNull(),
  },
  // Closed windows are deleted by range (the limiter's flush, and retention).
  (t) => [index("rate_limits_window").on(t.windowStart)],
);
