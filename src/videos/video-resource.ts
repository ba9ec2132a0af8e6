import { videoStatus } from "../../machines/video-machine.ts";
import { videoData, type VideoContext, type VideoStatus } from "../../machines/video-payload.ts";
import type { ActorRecord } from "../actors/actor-runtime.ts";

/**
 * GET body of a video: the event `data` shape (spec 2.5/2.6) plus progress and bookkeeping.
 * `licenseUrl`: a DRM video's `drm_license_url` with a token minted for this answer, so a
 * GET always hands out a full `DRM_TOKEN_TTL_MS` (the stored events keep the one minted at COMPLETED);
 * its `watch_url` carries the same token as `?drm_token=`.
 */
export function videoResource(record: ActorRecord<VideoContext>, opts: { licenseUrl?: (videoId: string) => string } = {}) {
  const status = videoStatus(record.value) as VideoStatus;
  const data = videoData(record.context, status);
  const outcome = record.context.outcome;
  const completed = status === "COMPLETED";
  const licenseUrl = data.video.drm_license_url && opts.licenseUrl ? opts.licenseUrl(record.id) : data.video.drm_license_url;
  const watch = completed ? (outcome?.watchUrl ?? null) : null;
  // Issue 23: a DRM video's page plays only with a licence token (it never mints one): its watch_url carries this answer's.
  const drmToken = licenseUrl ? new URL(licenseUrl).searchParams.get("token") : null;
  return {
    ...data,
    video: {
      ...data.video,
      ...(licenseUrl ? { drm_license_url: licenseUrl } : {}),
      progress: record.context.progress,
      // Issue 29 item 1: COMPLETED with a manifest, or playable while transcoding (the machine's `playableUrl`).
      playable: completed ? data.video.url !== null : status === "TRANSCODING" && !!record.context.playableUrl,
      source_url: record.context.sourceUrl,
      tags: record.context.tags,
      created_at: record.context.createdAt,
      // Issue 16 (posters): null until COMPLETED; thumbnail and storyboard also null for a source without video.
      thumbnail_url: completed ? (outcome?.posters?.thumbnailUrl ?? null) : null,
      storyboard_url: completed ? (outcome?.posters?.storyboardUrl ?? null) : null,
      watch_url: watch && drmToken ? `${watch}?drm_token=${encodeURIComponent(drmToken)}` : watch,
    },
  };
}
