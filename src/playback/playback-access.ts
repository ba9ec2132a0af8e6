import { eq } from "drizzle-orm";
import type { Database, Tx } from "../db/create-database.ts";
import { playbackAccess } from "../db/schema/index.ts";

import type { PlaybackPolicy } from "../orgs/org-settings.ts";

export { PLAYBACK_POLICIES, type PlaybackPolicy } from "../orgs/org-settings.ts";

/** Who may play an asset's media: its id (a token's `sub`), organization, policy and attached restriction. */
export interface AssetAccess {
  assetId: string;
  orgId: string;
  policy: PlaybackPolicy;
  restrictionId: string | null;
}

/** Tokens remembered per process; rows never change, so entries never go stale (the whole map is dropped when full). */
const MAX_CACHED = 20_000;

/**
 * The `playback_access` rows: a media token (the 40 hex digits of
 * `/media/<token>/` or `/live/<token>/`) → the asset's access rules. Written
 * in the asset's creation transaction and only for a signed or restricted
 * asset, so an unknown token is a public one. A row never changes after its
 * commit and its token is unknown to anyone before that commit (an HMAC of an
 * id not yet handed out), so both answers, a row and "none", are kept in
 * memory for good: no read per segment.
 */
export function createPlaybackAccess(database: Database) {
  const cached = new Map<string, AssetAccess | null>();

  return {
    /** Records an asset's rules in the caller's (creation) transaction; nothing for a public, unrestricted asset. */
    async recordIn(tx: Tx, token: string, access: AssetAccess): Promise<void> {
      if (access.policy === "public" && !access.restrictionId) return;
      await tx
        .insert(playbackAccess)
        .values({ token, assetId: access.assetId, orgId: access.orgId, policy: access.policy, restrictionId: access.restrictionId, createdAt: Date.now() })
        .onConflictDoNothing({ target: playbackAccess.token });
    },

    async of(token: string): Promise<AssetAccess | null> {
      const hit = cached.get(token);
      if (hit !== undefined) return hit;
      const [row] = await database.db.select().from(playbackAccess).where(eq(playbackAccess.token, token)).limit(1);
      const access: AssetAccess | null = row ? { assetId: row.assetId, orgId: row.orgId, policy: row.policy as PlaybackPolicy, restrictionId: row.restrictionId } : null;
      if (cached.size >= MAX_CACHED) cached.clear();
      cached.set(token, access);
      return access;
    },
  };
}

export type PlaybackAccess = ReturnType<typeof createPlaybackAccess>;
