import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * People who sign in to the settings screen (issue 13). A user is an email and
 * an argon2id password hash (PHC string); null until the setup link is used.
 * `scope_org_id` (issue 23): the one organization an account whose password
 * was set through a link shown to an inviter belongs to; null for an account
 * whose email is proven (its password set through a link mailed to the
 * address), which may belong to several organizations. One email may have one
 * proven account and one scoped account per organization.
 * Who deletes these rows: a user is deleted with their last membership.
 */
export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    /** Lower-cased, trimmed. */
    email: text("email").notNull(),
    passwordHash: text("password_hash"),
    createdAt: integer("created_at").notNull(),
    scopeOrgId: text("scope_org_id"),
  },
  (t) => [uniqueIndex("users_email_scope").on(t.email, t.scopeOrgId), uniqueIndex("users_email_proven").on(t.email).where(sql`scope_org_id IS NULL`)],
);

/**
 * A user's place in an organization. `owner` (exactly one per organization,
 * made by `cli org create --owner-email`), `admin`, `developer`, `viewer`.
 * Deleted when the owner removes the member.
 */
export const memberships = sqliteTable(
  "memberships",
  {
    orgId: text("org_id").notNull(),
    userId: text("user_id").notNull(),
    role: text("role").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.userId] }), index("memberships_user").on(t.userId)],
);

/**
 * One-time, expiring links: the owner's setup link and invitations. Only the
 * SHA-256 of the token is stored. Retention deletes rows past `expires_at`
 * (used or not).
 */
export const setupTokens = sqliteTable(
  "setup_tokens",
  {
    tokenHash: text("token_hash").primaryKey(),
    userId: text("user_id").notNull(),
    orgId: text("org_id").notNull(),
    /** owner_setup | invite | password_reset */
    purpose: text("purpose").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    usedAt: integer("used_at"),
    /** 1: the link was mailed to the address (SMTP_URL), so using it proves the email; 0: shown to whoever made it. */
    delivered: integer("delivered").notNull().default(0),
  },
  (t) => [index("setup_tokens_expires").on(t.expiresAt), index("setup_tokens_user").on(t.userId)],
);

/**
 * Signed-in sessions of the settings screen. The cookie carries a random token;
 * only its SHA-256 is stored. `csrf_token` is the per-session synchronizer token
 * every form posts back. Retention deletes rows past `expires_at`; sign-out and
 * member removal delete them at once.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    idHash: text("id_hash").primaryKey(),
    userId: text("user_id").notNull(),
    orgId: text("org_id").notNull(),
    csrfToken: text("csrf_token").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [index("sessions_expires").on(t.expiresAt), index("sessions_user").on(t.userId)],
);
