import type { Limits } from "../orgs/org-settings.ts";

/**
 * Bodies read into memory, per route family: each is read by
 * `readBoundedBody` (bounded-body.ts), counted while it arrives, 413
 * PAYLOAD_TOO_LARGE past its limit, with or without `Content-Length` (issue 23).
 *
 * | Family | Routes | Limit |
 * |---|---|---|
 * | `apiJson` | every `/api/public/v1/` route but tus (a route without a body refuses any but `{}`/`null`: 422) | 1 MiB |
 * | `settingsForm` | every POST of `/settings/` (sign-in, setup link, section forms) | 64 KiB |
 * | `sdpOffer` | WHIP and WHEP offers (`/live/{token}/whip`, `/whep`) | 64 KiB |
 * | `drmLicence` | `POST /drm/clearkey/{id}/license` | 16 KiB |
 *
 * Files are never in memory: the presigned `PUT /uploads/{id}` and tus
 * `PATCH` stream to disk, bounded by the slot's `max_bytes` and by the
 * upload's `Upload-Length`. Routes no family names (GET pages, media, HLS)
 * never read a body. The server itself (Bun.serve `maxRequestBodySize`)
 * refuses any body larger than the largest legitimate one: `serverMaxBodyBytes`.
 */
export const BODY_LIMITS = {
  /** The largest body of the API is a webhook endpoint or a video with 50 tags: tens of KB. */
  apiJson: 1024 * 1024,
  /** The largest form is a webhook endpoint's (URL, events, fields, description) or the organization's settings: a few KB. */
  settingsForm: 64 * 1024,
  /** An SDP offer is a few KB; 64 KiB leaves room for many candidates. */
  sdpOffer: 64 * 1024,
  /** A licence request is a few key ids. */
  drmLicence: 16 * 1024,
} as const;

/** Bun.serve's `maxRequestBodySize`: the largest legitimate body, a file upload of UPLOAD_MAX_BYTES (and never below the JSON limit). */
export function serverMaxBodyBytes(uploadMaxBytes: number): number {
  return Math.max(uploadMaxBytes, BODY_LIMITS.apiJson);
}

const RETRY_PATH = /^\/videos\/[^/]+\/retry\/$/;
/** Issue 27: a clip of a video or of a live stream queues a billed transcode too. */
const CLIP_PATH = /^\/(videos|livestreams)\/[^/]+\/clips\/$/;

/** The per-organization limits of spec section 8, on top of the per-key ceiling. */
export function orgLimitFor(method: string, path: string, limits: Limits): { name: string; limit: number } | null {
  if (method !== "POST") return null;
  const p = path.endsWith("/") ? path : path + "/";
  // Booking takes from the same finite pool as creating, so both count in one bucket.
  if (p === "/livestreams/" || p === "/livestreams/schedule/") return { name: "livestreams.create", limit: limits.livestreamsCreatePerMinute };
  // A retry queues a billed transcode as a registration does: the same bucket.
  if (p === "/videos/" || RETRY_PATH.test(p) || CLIP_PATH.test(p)) return { name: "videos.create", limit: limits.videosCreatePerMinute };
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
