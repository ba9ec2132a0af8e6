import { decodeProtectedHeader, errors, jwtVerify } from "jose";

/** Mux's audiences: playlists and segments, thumbnails, animated images (GIF/WebP), storyboards. */
export type Audience = "v" | "t" | "g" | "s";

export const AUDIENCE_NAMES: Record<Audience, string> = { v: "playlists and segments", t: "thumbnails", g: "animated images", s: "storyboards" };

/** The claims a media request uses; every other claim is ignored. */
export interface PlaybackClaims {
  playbackRestrictionId: string | null;
}

type Verdict = { ok: true; claims: PlaybackClaims } | { ok: false; reason: string };

const refuse = (reason: string): Verdict => ({ ok: false, reason });

/**
 * Verifies a customer-signed playback token (Mux's format) with jose:
 * RS256 only (`alg: none`, HS256 and the rest refused before any key is
 * looked up), header `kid` = one of the asset organization's signing keys,
 * `sub` = the asset's id, `aud` = the audience of the requested file, `exp`
 * required and in the future. Answers the reason of a refusal in words.
 */
export async function verifyPlaybackToken(jwt: string, expect: { assetId: string; aud: Audience; keyOf: (kid: string) => Promise<CryptoKey | null> }): Promise<Verdict> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(jwt);
  } catch {
    return refuse("is not a JWT (header.claims.signature)");
  }
  if (header.alg !== "RS256") return refuse(`must be signed with RS256, not ${typeof header.alg === "string" ? header.alg : "no algorithm"}`);
  if (typeof header.kid !== "string" || header.kid === "") return refuse("has no kid header (the signing key's id)");
  const key = await expect.keyOf(header.kid);
  if (!key) return refuse(`kid ${header.kid.slice(0, 64)} is not a signing key of this video's organization`);
  let payload: Awaited<ReturnType<typeof jwtVerify>>["payload"];
  try {
    ({ payload } = await jwtVerify(jwt, key, { algorithms: ["RS256"], requiredClaims: ["exp", "sub", "aud"] }));
  } catch (err) {
    if (err instanceof errors.JWTExpired) return refuse("has expired (exp)");
    if (err instanceof errors.JWTClaimValidationFailed) return refuse(`claim ${err.claim} is missing or invalid (${err.message})`);
    if (err instanceof errors.JWSSignatureVerificationFailed) return refuse("signature does not verify with its kid's public key");
    return refuse("is not a valid signed JWT");
  }
  if (payload.sub !== expect.assetId) return refuse("sub is not this video's or stream's id");
  const auds = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!auds.includes(expect.aud)) return refuse(`aud must be "${expect.aud}" (${AUDIENCE_NAMES[expect.aud]}) for this media`);
  const restriction = payload.playback_restriction_id;
  return { ok: true, claims: { playbackRestrictionId: typeof restriction === "string" ? restriction : null } };
}
