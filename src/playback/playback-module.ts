import type { Database } from "../db/create-database.ts";
import { createAssetPlayback } from "./asset-playback.ts";
import { createPlaybackAccess } from "./playback-access.ts";
import { createPlaybackGuard } from "./playback-guard.ts";
import { playbackRoutes } from "./playback-routes.ts";
import { createRestrictions } from "./restrictions.ts";
import { createSigningKeys } from "./signing-keys.ts";

/** Signed playback and playback restrictions (issue 27), wired: stores, the media gate, what asset creation records, the API. */
export function createPlaybackModule(deps: { database: Database }) {
  const keys = createSigningKeys(deps.database);
  const restrictions = createRestrictions(deps.database);
  const access = createPlaybackAccess(deps.database);
  const guard = createPlaybackGuard({ access, keys, restrictions });
  return {
    keys,
    restrictions,
    /** The one check of every media route (src/storage/media-routes.ts `MediaGate`). */
    gate: guard.gate,
    /** What the videos and live modules record when they create an asset. */
    assets: createAssetPlayback({ access, restrictions }),
    plugins: [playbackRoutes({ keys, restrictions })],
  };
}

export type PlaybackModule = ReturnType<typeof createPlaybackModule>;
