import type { Limits } from "../orgs/org-settings.ts";

/** The per-organization limits of spec section 8, on top of the per-key ceiling. */
export function orgLimitFor(method: string, path: string, limits: Limits): { name: string; limit: number } | null {
  if (method !== "POST") return null;
  const p = path.endsWith("/") ? path : path + "/";
  // Booking takes from the same finite pool as creating, so both count in one bucket.
  if (p === "/livestreams/" || p === "/livestreams/schedule/") return { name: "livestreams.create", limit: limits.livestreamsCreatePerMinute };
  if (p === "/videos/") return { name: "videos.create", limit: limits.videosCreatePerMinute };
  if (p === "/videos/upload-url/") return { name: "videos.upload-url", limit: limits.uploadUrlPerMinute };
  return null;
}
