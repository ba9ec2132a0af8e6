import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Signed playback and playback restrictions (src/playback, issue 27).
 *
 * `signing_keys`: the public half of an organization's RS256 key (SPKI PEM);
 * the private half is shown once at creation and never stored.
 * `playback_restrictions`: referrer rules (`referrer` JSON).
 * `playback_access`: one row per asset that is signed or restricted, keyed by
 * the token of its media URLs (`/media/<token>/`, `/live/<token>/`), written
 * in the asset's creation transaction: the media routes know only the token.
 * A public, unrestricted asset has no row.
 */
export const signingKeys = sqliteTable(
  "signing_keys",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    publicKey: text("public_key").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("signing_keys_org").on(t.orgId, t.createdAt)],
);

export const playbackRestrictions = sqliteTable(
  "playback_restrictions",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    referrer: text("referrer", { mode: "json" }).notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("playback_restrictions_org").on(t.orgId, t.createdAt)],
);

export const playbackAccess = sqliteTable(
  "playback_access",
  {
    token: text("token").primaryKey(),
    assetId: text("asset_id").notNull(),
    orgId: text("org_id").notNull(),
    policy: text("policy").notNull(),
    restrictionId: text("restriction_id"),
    createdAt: integer("created_at").notNull(),
  },
  // Retention deletes an asset's rows with its actor (src/retention/retention-rules.ts actorsRule).
  (t) => [index("playback_access_asset").on(t.assetId)],
);
