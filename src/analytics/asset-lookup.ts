import { sql } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import { actors } from "../db/schema/index.ts";

/** What a beacon needs of the asset it names. */
export interface BeaconAsset {
  orgId: string;
  kind: "video" | "livestream";
  signed: boolean;
}

const MAX_CACHED = 50_000;
/** A found asset is re-read after this (a deletion stops its beacons within it); a missing one sooner. */
const FOUND_TTL_MS = 60_000;
const MISSING_TTL_MS = 5_000;

/**
 * Asset id → organization, kind and playback policy, from the actor row
 * (not deleted), remembered per process for a minute: beacons arrive every
 * few seconds per viewer and must not read the database each time.
 */
export function createAssetLookup(database: Database, now: () => number = Date.now) {
  const cached = new Map<string, { asset: BeaconAsset | null; until: number }>();
  return {
    async of(id: string, kind: BeaconAsset["kind"]): Promise<BeaconAsset | null> {
      const key = `${kind}:${id}`;
      const hit = cached.get(key);
      const t = now();
      if (hit && hit.until > t) return hit.asset;
      const [row] = await database.db
        .select({ orgId: actors.orgId, policy: sql<string | null>`json_extract(${actors.state}, '$.context.playbackPolicy')` })
        .from(actors)
        .where(sql`${actors.id} = ${id} AND ${actors.kind} = ${kind} AND ${actors.deletedAt} IS NULL`)
        .limit(1);
      const asset: BeaconAsset | null = row ? { orgId: row.orgId, kind, signed: row.policy === "signed" } : null;
      if (cached.size >= MAX_CACHED) cached.clear();
      cached.set(key, { asset, until: t + (asset ? FOUND_TTL_MS : MISSING_TTL_MS) });
      return asset;
    },
  };
}

export type AssetLookup = ReturnType<typeof createAssetLookup>;
