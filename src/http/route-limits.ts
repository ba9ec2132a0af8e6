import type { Limits } from "../orgs/org-settings.ts";

const RETRY_PATH = /^\/videos\/[^/]+\/retry\/$/;

/** The per-organization limits of spec section 8, on top of the per-key ceiling. */
export function orgLimitFor(method: string, path: string, limits: Limits): { name: string; limit: number } | null {
  if (method !== "POST") return null;
  const p = path.endsWith("/") ? path : path + "/";
  // Booking takes from the same finite pool as creating, so both count in one bucket.
  if (p === "/livestreams/" || p === "/livestreams/schedule/") return { name: "livestreams.create", limit: limits.livestreamsCreatePerMinute };
  // A retry queues a billed transcode as a registration does: the same bucket.
  if (p === "/videos/" || RETRY_PATH.test(p)) return { name: "videos.create", limit: limits.videosCreatePerMinute };
  // Creating a resumable (tus) upload with the key opens the same storage as presigning one: the same bucket.
  if (p === "/videos/upload-url/" || p === "/videos/uploads/") return { name: "videos.upload-url", limit: limits.uploadUrlPerMinute };
  return null;
}

/**
 * The ClearKey licence route (`POST /drm/clearkey/{id}/license`, no API key, src/videos):
 * requests per minute per token and per client address. A player asks once per playback
 * session; the token of a stored event may be shared by every viewer of a site, hence the
 * larger allowance per token. Behind a proxy every client shares the proxy's address.
 */
export const DRM_LICENCE_LIMITS = { perToken: 600, perAddress: 120 } as const;

export function drmLicenceChecks(address: string, tokenDigest: string | null): Array<{ key: string; limit: number }> {
  const checks: Array<{ key: string; limit: number }> = [{ key: `drm:addr:${address}`, limit: DRM_LICENCE_LIMITS.perAddress }];
  if (tokenDigest) checks.push({ key: `drm:token:${tokenDigest}`, limit: DRM_LICENCE_LIMITS.perToken });
  return checks;
}
