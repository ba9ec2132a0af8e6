import { type Static, t } from "elysia";
import type { videoData } from "../../machines/video-payload.ts";
import { type Equals, named, recordOf, integer, isoTime, nullable, pageOf, strictObject } from "../http/openapi-docs.ts";
import type { UploadStore } from "./upload-store.ts";
import type { videoResource } from "./video-resource.ts";

/**
 * The response schemas of the video API and the `data` of the VIDEO_* events,
 * for the OpenAPI document. Each `Equals` line below pins a schema to the
 * return type of the code that builds the body (machines/video-payload.ts,
 * video-resource.ts, upload-store.ts): a field added on one side only fails tsc.
 */

const url = (description: string) => nullable(t.String(), { description });
const bytes = (description: string) => nullable(t.String({ pattern: "^[0-9]+$" }), { description: `${description} Decimal string (may exceed 2^53).` });

const VideoStatusSchema = t.Union([t.Literal("TRANSCODING"), t.Literal("COMPLETED"), t.Literal("ERROR")]);
const VideoKindSchema = t.Union([t.Literal("UPLOAD"), t.Literal("LIVESTREAM_RECORDING")]);

const videoFields = {
  id: t.String({ description: "The video's public id (`vid_…`)." }),
  title: t.String(),
  status: VideoStatusSchema,
  kind: VideoKindSchema,
  duration_seconds: nullable(t.Number(), { description: "Null until COMPLETED." }),
  size_bytes: bytes("Size of the original."),
  url: url(
    "The HLS master playlist (a DASH manifest for DRM) once COMPLETED; while TRANSCODING, the master as soon as it plays (issue 29: its rungs' EVENT playlists grow until `#EXT-X-ENDLIST`; VIDEO_PLAYABLE fires then).",
  ),
  drm: t.Boolean(),
  playback_policy: t.Union([t.Literal("public"), t.Literal("signed")], { description: "`signed`: every media URL needs `?token=<JWT>` (see Signed playback)." }),
  playback_restriction_id: nullable(t.String(), { description: "The playback restriction whose referrer rules apply." }),
  drm_content_id: url("The DRM key id (hex), for a DRM video once COMPLETED."),
  drm_license_url: url("The ClearKey licence URL with a signed, expiring token; null without DRM."),
  download_url: url("The first downloadable rendition's file."),
  download_size_bytes: bytes("Size of that download."),
  download_quality: url("Its quality, e.g. 720p."),
  download_password: url("Its password, when the organization protects downloads."),
  transcript_url: url("Machine-made WebVTT subtitles (`subtitles: true`)."),
  summary_url: url("Machine summary of the transcript (`subtitles: true`)."),
  source_video_id: nullable(t.String(), { description: "A clip (`POST /videos/{id}/clips/`): the video it was cut from; null otherwise." }),
  source_stream_id: nullable(t.String(), { description: "A live clip (`POST /livestreams/{id}/clips/`): the live stream it was cut from; null otherwise." }),
  transcoder_id: t.Optional(t.String({ description: "The worker that ran the transcode, once started." })),
  static_renditions: t.Array(
    strictObject({
      name: t.String({ examples: ["highest", "audio-only", "720p"], description: "As asked (`static_renditions` of POST /videos/ or the organization's default)." }),
      url: url("The MP4 (H.264/AAC, faststart), or for `audio-only` the M4A, once ready. Served like every media URL: a signed video's needs `?token=` (aud `v`)."),
      status: t.Union([t.Literal("preparing"), t.Literal("ready"), t.Literal("errored")]),
      bytes: bytes("Size of the file, once ready."),
      error: nullable(strictObject({ code: t.String({ examples: ["DRM_PROTECTED", "SOURCE_TOO_SMALL"] }), message: t.String() }), { description: "Why it is errored." }),
    }),
    { description: "Progressive files made from the renditions by stream copy (issue 27): `highest`, `audio-only`, or a rung name." },
  ),
};

const RenditionSchema = strictObject({
  quality: t.String({ examples: ["720p"] }),
  url: t.String({ description: "The rendition's HLS playlist." }),
  download_url: nullable(t.String()),
  download_size_bytes: nullable(t.String()),
  download_password: nullable(t.String()),
});

const dataFields = {
  renditions: t.Array(RenditionSchema),
  error: nullable(strictObject({ code: t.String(), message: t.String() }), { description: "Why the video is in ERROR." }),
  storage: nullable(recordOf(t.String()), { description: "Bytes stored, by part (`total_bytes`, `hls_bytes`, …), as decimal strings." }),
  stream: nullable(strictObject({ id: t.String(), stream_key: t.String() }), { description: "The live stream a recording comes from." }),
};

/** `data` of the VIDEO_* events (spec 2.5/2.6). */
export const VideoEventDataSchema = strictObject({ video: strictObject(videoFields), ...dataFields });

/** GET /videos/{id}/: the event shape plus progress and bookkeeping (and the poster fields of issue 16). */
export const VideoResourceSchema = strictObject({
  video: strictObject({
    ...videoFields,
    progress: t.Number({ minimum: 0, maximum: 100, description: "Transcode progress, 0-100." }),
    playable: t.Boolean({
      description:
        "`url` plays now: COMPLETED, or (issue 29) still TRANSCODING with every rung's first segments stored and produced fast enough that a player starting now at normal speed never stalls. Start a player at position 0 (hls.js: `startPosition: 0`): until COMPLETED the playlists are EVENT playlists, which players otherwise join near their end.",
    }),
    source_url: nullable(t.String()),
    tags: nullable(recordOf(t.Unknown())),
    created_at: isoTime(),
    thumbnail_url: url("A JPEG frame of the video, once COMPLETED (null for a source without video)."),
    storyboard_url: url("WebVTT storyboard (sprite coordinates) for scrubbing previews, once COMPLETED."),
    watch_url: url(
      "A page with an embeddable player, once COMPLETED. A DRM video's carries `?drm_token=`: the licence token of this answer (the same as in `drm_license_url`, valid `DRM_TOKEN_TTL_MS`); the page never mints one.",
    ),
  }),
  ...dataFields,
});

export const VideoListSchema = pageOf(VideoResourceSchema);

/** POST /videos/: the asset summary and the video as GET answers it. */
export const RegisteredVideoSchema = strictObject({
  asset: strictObject({ public_id: t.String(), status: VideoStatusSchema, kind: VideoKindSchema, title: t.String(), created_at: isoTime() }),
  ...VideoResourceSchema.properties,
});

export const UploadUrlSchema = strictObject({
  upload_id: t.String(),
  upload_url: t.String({ description: "PUT the raw file here (single use, expires at `expires_at`)." }),
  method: t.String({ description: "Always PUT." }),
  tus_url: t.String({ description: "Or upload resumably with the tus protocol here (same authorization)." }),
  source_url: t.String({ description: "Pass as `source_url` to POST /videos/ once the PUT succeeded." }),
  expires_at: isoTime(),
  max_bytes: integer(),
});

export const DrmTokenSchema = strictObject({ drm_license_url: t.String(), expires_at: isoTime() });

export type VideoResource = Static<typeof VideoResourceSchema>;

// Drift guards (see Equals): the builders' return types are exactly the schemas' Static types.
const _eventData: Equals<Static<typeof VideoEventDataSchema>, ReturnType<typeof videoData>> = true;
const _resource: Equals<VideoResource, ReturnType<typeof videoResource>> = true;
const _upload: Equals<Static<typeof UploadUrlSchema>, Awaited<ReturnType<UploadStore["create"]>>> = true;
void [_eventData, _resource, _upload];

// Named in the document (components.schemas), so clients get these types by name.
named("Video", VideoResourceSchema);
named("VideoEventData", VideoEventDataSchema);
named("Rendition", RenditionSchema);
named("UploadSlot", UploadUrlSchema);
named("DrmToken", DrmTokenSchema);
