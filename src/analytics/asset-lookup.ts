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
  /** The remembered answer, or undefined when it must be read. */
  function peek(id: string, kind: BeaconAsset["kind"]): BeaconAsset | null | undefined {
    const hit = cached.get(`${kind}:${id}`);
    return hit && hit.until > now() ? hit.asset : undefined;
  }
  return {
    /** Synchronous on the beacon path (no promise when remembered). */
    peek,
    async of(id: string, kind: BeaconAsset["kind"]): Promise<BeaconAsset | null> {
      const known = peek(id, kind);
      if (known !== undefined) return known;
      const key = `${kind}:${id}`;
      const t = now();
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
