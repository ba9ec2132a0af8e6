/** The OpenAPI details of the video routes (video-routes.ts), in their order there: a fresh object for each app. */
import { doc, DeletedSchema } from "../http/openapi-docs.ts";
import { DrmTokenSchema, RegisteredVideoSchema, UploadUrlSchema, VideoListSchema, VideoResourceSchema } from "./video-resource-schema.ts";
import { registerVideoInput, uploadUrlInput } from "./video-schemas.ts";
import { videoClipInput } from "./clip-schemas.ts";

const tags = ["Videos"];

export const registerVideoDoc = () =>
  doc({
    operationId: "createVideo",
    body: registerVideoInput.schema,
    tags,
    summary: "Register a video",
    description:
      "Registers a video from an http(s) `source_url` and queues a transcode (VIDEO_UPLOADED fires). Idempotent on `source_url` per organization: a second call returns the existing asset with 200 and queues nothing. Unknown fields are refused (422 naming each); `null` on an optional field is the same as leaving it out. `subtitles: true` transcribes the speech (machine-made WebVTT `transcript_url`, a subtitle rendition in the HLS master, a machine summary `summary_url`); 422 with `details.subtitles` when the server has no speech-to-text engine. Errors: 409 TRANSCODE_NOT_CONFIGURED, 409 DRM_NOT_AVAILABLE, 422 VALIDATION_ERROR, 429 RATE_LIMITED (20/min per organization), 502 TRANSCODE_QUEUE_FAILED (with `Retry-After`).",
    ok: 201,
    data: RegisteredVideoSchema,
    alsoOk: "The `source_url` was already registered: the existing video, nothing queued.",
    dataDescription: "201 `data.asset.public_id` and the video (GET shape); 200 with the existing video when `source_url` is already registered.",
    errors: ["VALIDATION_ERROR", "TRANSCODE_NOT_CONFIGURED", "DRM_NOT_AVAILABLE", "TRANSCODE_QUEUE_FAILED"],
  });

export const uploadUrlDoc = () =>
  doc({
    operationId: "createUploadUrl",
    body: uploadUrlInput.schema,
    bodyRequired: false,
    tags,
    summary: "Presign an upload",
    description:
      "Returns a single-use `upload_url` (PUT the raw file, expires in one hour) and the `source_url` to pass to POST /videos/ afterwards. Rate limited to 60/min per organization. An organization without transcoding gets 409 TRANSCODE_NOT_CONFIGURED (nothing created), as on POST /videos/.",
    ok: 201,
    data: UploadUrlSchema,
    dataDescription: "`upload_url`, `method`, `source_url`, `expires_at`, `max_bytes`.",
    errors: ["VALIDATION_ERROR", "TRANSCODE_NOT_CONFIGURED"],
  });

export const listVideosDoc = () =>
  doc({
    operationId: "listVideos",
    tags,
    summary: "List videos",
    description:
      "Newest first. `limit` (1-100, default 20) and `cursor` (from `next_cursor`). Filters: `status` (TRANSCODING, COMPLETED or ERROR; several separated by commas) and `kind` (UPLOAD or LIVESTREAM_RECORDING). Any other query parameter, a repeated one or a bad value is 422 naming it.",
    data: VideoListSchema,
    dataDescription: "`items` (GET shape each) and `next_cursor`.",
    errors: ["VALIDATION_ERROR"],
  });

export const getVideoDoc = () =>
  doc({
    operationId: "getVideo",
    tags,
    summary: "Get a video",
    description:
      "The event `data` shape (video, renditions, error, storage, stream) plus `video.progress` (0-100) while transcoding. A completed DRM video's `drm_license_url` carries a token minted for this answer (valid `DRM_TOKEN_TTL_MS`, 24 h by default).",
    data: VideoResourceSchema,
    dataDescription: "`video`, `renditions`, `error`, `storage`, `stream`.",
    errors: ["NOT_FOUND", "VALIDATION_ERROR"],
  });

export const drmTokenDoc = () =>
  doc({
    operationId: "createDrmToken",
    tags,
    summary: "Mint a DRM licence token",
    description:
      "A fresh `drm_license_url` for a video registered with `drm_enabled: true`: the ClearKey licence endpoint (POST /drm/clearkey/{id}/license) with a signed token in `?token=`, valid until `expires_at` (`DRM_TOKEN_TTL_MS`, 24 h by default). Tokens are not stored and cannot be revoked; each call mints a new one. Another organization's video is 404 as a missing one; a video without DRM is 409 DRM_NOT_AVAILABLE (`details.drm_enabled`). No body.",
    data: DrmTokenSchema,
    dataDescription: "`drm_license_url` (string), `expires_at` (ISO 8601).",
    errors: ["NOT_FOUND", "DRM_NOT_AVAILABLE", "VALIDATION_ERROR"],
  });

export const retryVideoDoc = () =>
  doc({
    operationId: "retryVideo",
    tags,
    summary: "Retry a failed video",
    description:
      "Tries a video in ERROR again: the same id and source, fresh attempts (a URL source is fetched again, an upload or a recording transcoded again from its file). The video is TRANSCODING again with `error` null; VIDEO_UPLOADED does not fire again (the asset was registered once), VIDEO_TRANSCODING_STARTED and then VIDEO_TRANSCODING_COMPLETED or VIDEO_TRANSCODING_FAILED fire for the new attempt. Counts in the `POST /videos/` limit (20/min per organization): it queues a billed transcode. No body. Errors: 404 NOT_FOUND (also another organization's id), 409 VIDEO_NOT_RETRYABLE when the video is not in ERROR (`details.status` is its status; a second retry racing the first gets it too), 409 TRANSCODE_NOT_CONFIGURED when the organization has transcoding off, 409 CLIP_SOURCE_GONE for a clip whose source is gone (`details.source_video_id`: its parent was deleted before the clip was cut; `details.source_stream_id`: a live clip's copy of the recording was removed by retention), 502 TRANSCODE_QUEUE_FAILED (with `Retry-After`). A clip is cut again from its parent's original (or a live clip from its kept copy of the recording).",
    data: VideoResourceSchema,
    dataDescription: "The video (GET shape), `video.status` TRANSCODING.",
    errors: ["NOT_FOUND", "VIDEO_NOT_RETRYABLE", "TRANSCODE_NOT_CONFIGURED", "CLIP_SOURCE_GONE", "TRANSCODE_QUEUE_FAILED", "VALIDATION_ERROR"],
  });

export const deleteVideoDoc = () =>
  doc({
    operationId: "deleteVideo",
    tags,
    summary: "Delete a video",
    description: "Cancels a running transcode and deletes the video's files.",
    data: DeletedSchema,
    dataDescription: "`id`, `deleted: true`.",
    errors: ["NOT_FOUND", "VALIDATION_ERROR"],
  });

export const createVideoClipDoc = () =>
  doc({
    operationId: "createVideoClip",
    body: videoClipInput.schema,
    tags,
    summary: "Clip a video",
    description:
      "Creates a new video of `[start_time, end_time)` seconds of a COMPLETED video, cut to the frame (the first frame at or after `start_time`), with `source_video_id` naming its parent. It is transcoded like any video, with its own events (VIDEO_UPLOADED, VIDEO_TRANSCODING_STARTED, then COMPLETED or FAILED), and inherits the parent's DRM flag, subtitles, playback policy and restriction. Deleting the parent before the clip has cut its own copy fails the clip with `error.code` SOURCE_VIDEO_DELETED; after that, the clip no longer needs it. Errors: 404 for an id of another organization; 409 VIDEO_NOT_COMPLETED (`details.status`) for a parent still transcoding or in ERROR; 422 naming `start_time`/`end_time` (0 <= start < end <= the video's length); 429 RATE_LIMITED (counted with POST /videos/).",
    ok: 201,
    data: VideoResourceSchema,
    dataDescription: "The clip (GET shape), status TRANSCODING.",
    errors: ["NOT_FOUND", "VALIDATION_ERROR", "VIDEO_NOT_COMPLETED", "TRANSCODE_NOT_CONFIGURED", "TRANSCODE_QUEUE_FAILED"],
  });
