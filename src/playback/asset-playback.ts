import type { Tx } from "../db/create-database.ts";
import type { Organization } from "../orgs/org-store.ts";
import type { PlaybackPolicy } from "../orgs/org-settings.ts";
import { UnknownRestriction } from "./errors.ts";
import type { AssetAccess, PlaybackAccess } from "./playback-access.ts";
import type { Restrictions } from "./restrictions.ts";

/** An asset's playback rules as its context keeps them. */
export interface AssetRules {
  policy: PlaybackPolicy;
  restrictionId: string | null;
}

/**
 * What the videos and live modules ask of playback when they create an
 * asset: the rules of the request (else the organization's default policy),
 * checked before anything is created, then recorded in the creation's own
 * transaction under the asset's media token.
 */
export interface AssetPlayback {
  resolve(org: Organization, input: { playback_policy?: PlaybackPolicy; playback_restriction_id?: string }): Promise<AssetRules>;
  recordIn(tx: Tx, mediaToken: string, access: AssetAccess): Promise<void>;
}

export function createAssetPlayback(deps: { access: PlaybackAccess; restrictions: Restrictions }): AssetPlayback {
  return {
    async resolve(org, input) {
      const restrictionId = input.playback_restriction_id ?? null;
      if (restrictionId && !(await deps.restrictions.get(org.id, restrictionId))) throw new UnknownRestriction();
      return { policy: input.playback_policy ?? org.settings.playback.policy, restrictionId };
    },
    recordIn: (tx, token, access) => deps.access.recordIn(tx, token, access),
  };
}

/** No playback module (unit tests of a module alone): every asset public. */
export const PUBLIC_ONLY: AssetPlayback = {
  resolve: async (org, input) => ({ policy: input.playback_policy ?? org.settings.playback.policy, restrictionId: input.playback_restriction_id ?? null }),
  recordIn: async () => {},
};
