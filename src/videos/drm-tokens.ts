import type { ServerSecret } from "../secrets/server-secret.ts";

/** HMAC purpose of licence tokens: a tag of another purpose (upload, media path) never verifies here. */
const PURPOSE = "drm-licence";
/** Hex digits of the tag kept in the token: 128 bits, as the RTMP signature. */
const TAG_HEX = 32;
const TOKEN = /^(\d{1,12})\.([0-9a-f]{32})$/;

export type TokenVerdict = "ok" | "missing" | "malformed" | "expired";

/** Path of a video's ClearKey licence endpoint (src/videos/drm-licence-routes.ts). */
export const licencePath = (videoId: string) => `/drm/clearkey/${encodeURIComponent(videoId)}/license`;

/**
 * Licence tokens: `<expires, epoch seconds>.<HMAC(video id + expiry)>`. The
 * video id is not in the token but in the licence URL's path and in the
 * signed message, so a token minted for one video never verifies on another's
 * URL. Stateless: nothing is stored, nothing can be revoked before it expires
 * (`DRM_TOKEN_TTL_MS`, default 24 h, bounds that).
 */
export function createDrmTokens(deps: { secret: ServerSecret; baseUrl: () => string; ttlMs: number; now?: () => number }) {
  const now = deps.now ?? Date.now;
  const message = (videoId: string, exp: string) => `${videoId}.${exp}`;

  function mint(videoId: string, at = now()): { token: string; expiresAt: Date; url: string } {
    const exp = String(Math.ceil((at + deps.ttlMs) / 1000));
    const token = `${exp}.${deps.secret.sign(PURPOSE, message(videoId, exp)).slice(0, TAG_HEX)}`;
    return { token, expiresAt: new Date(Number(exp) * 1000), url: `${deps.baseUrl()}${licencePath(videoId)}?token=${token}` };
  }

  return {
    mint,
    /** Signature first (constant-time), then the clock: "expired" is only ever said of a genuine token. */
    verify(videoId: string, token: string | null | undefined, at = now()): TokenVerdict {
      if (!token) return "missing";
      const m = TOKEN.exec(token);
      if (!m) return "malformed";
      if (!deps.secret.verify(PURPOSE, message(videoId, m[1]!), m[2]!, TAG_HEX)) return "malformed";
      return Number(m[1]) * 1000 <= at ? "expired" : "ok";
    },
  };
}

export type DrmTokens = ReturnType<typeof createDrmTokens>;
