import { domainErrorResponse } from "../http/domain-error-map.ts";
import type { MediaGate, MediaGrant } from "../storage/media-routes.ts";
import { PlaybackRefused } from "./errors.ts";
import type { PlaybackAccess } from "./playback-access.ts";
import { type Audience, verifyPlaybackToken } from "./playback-token.ts";
import { refuseReferrer } from "./referrer-rule.ts";
import type { Restrictions } from "./restrictions.ts";
import type { SigningKeys } from "./signing-keys.ts";

/** The audience a token needs for a file, by its name: thumbnails `t`, animated images `g`, storyboards `s`, everything else `v`. */
export function audienceOf(file: string): Audience {
  const name = file.split("/").pop() ?? "";
  if (name.startsWith("thumbnail")) return "t";
  if (name.startsWith("animated")) return "g";
  if (name.startsWith("storyboard")) return "s";
  return "v";
}

/**
 * A request made by this asset's own watch page (same host, Referer path `…/watch/<media token>`): the page was judged
 * by its embedder's Referer when it loaded (src/videos/watch-routes.ts), so its media requests are not judged again by
 * the restriction (they would name only the page). A browser sends such a Referer only from that page.
 */
function fromOwnWatchPage(request: Request, mediaToken: string): boolean {
  const referer = request.headers.get("referer");
  if (!referer) return false;
  try {
    const page = new URL(referer);
    return page.host === new URL(request.url).host && page.pathname.endsWith(`/watch/${mediaToken}`);
  } catch {
    return false;
  }
}

const OPEN: MediaGrant = { token: null, private: false };
/** Web players read the status of a refusal only with CORS (hls.js sees a network error otherwise). */
const CORS = { "access-control-allow-origin": "*" };

/**
 * The one check every media route calls (`/media/`, `/live/`, the DRM
 * licence, the image routes): public and unrestricted → open; a signed asset
 * needs `?token=` (playback-token.ts); a restriction attached to the asset or
 * named by the token's `playback_restriction_id` claim judges the Referer.
 * A refusal is the 403 envelope with `details` naming the reason.
 */
export function createPlaybackGuard(deps: { access: PlaybackAccess; keys: SigningKeys; restrictions: Restrictions }) {
  async function decide(request: Request, mediaToken: string, file: string, tokenParam: string): Promise<MediaGrant> {
    const access = await deps.access.of(mediaToken);
    if (!access) return OPEN;
    const restrictionIds = access.restrictionId ? [access.restrictionId] : [];
    let token: string | null = null;
    if (access.policy === "signed") {
      token = new URL(request.url).searchParams.get(tokenParam);
      if (!token) throw new PlaybackRefused({ [tokenParam]: `is required: this media's playback_policy is signed (append ?${tokenParam}=<JWT>)` });
      const verdict = await verifyPlaybackToken(token, { assetId: access.assetId, aud: audienceOf(file), keyOf: (kid) => deps.keys.verifierOf(kid, access.orgId) });
      if (!verdict.ok) throw new PlaybackRefused({ [tokenParam]: verdict.reason });
      if (verdict.claims.playbackRestrictionId) restrictionIds.push(verdict.claims.playbackRestrictionId);
    }
    if (fromOwnWatchPage(request, mediaToken)) return { token, private: true };
    for (const id of restrictionIds) {
      const rule = await deps.restrictions.get(access.orgId, id);
      if (!rule) throw new PlaybackRefused({ playback_restriction_id: "names no playback restriction of this organization (deleted?)" });
      const reason = refuseReferrer(rule.referrer, request.headers.get("referer"));
      if (reason) throw new PlaybackRefused({ referrer: reason });
    }
    return { token, private: true };
  }

  const gate: MediaGate = async (request, mediaToken, file, opts) => {
    try {
      return await decide(request, mediaToken, file, opts?.tokenParam ?? "token");
    } catch (err) {
      if (!(err instanceof PlaybackRefused)) throw err;
      const res = domainErrorResponse(err);
      for (const [k, v] of Object.entries(CORS)) res.headers.set(k, v);
      return res;
    }
  };
  return { gate };
}

export type PlaybackGuard = ReturnType<typeof createPlaybackGuard>;
