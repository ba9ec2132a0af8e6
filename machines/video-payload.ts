/** Pure builders for the video event payloads of spec 2.5 / 2.6 (and the GET body). */

export type VideoKind = "UPLOAD" | "LIVESTREAM_RECORDING";
export type VideoStatus = "TRANSCODING" | "COMPLETED" | "ERROR";

export interface Rendition {
  quality: string;
  url: string;
  width: number | null;
  height: number | null;
  download_url: string | null;
  download_size_bytes: string | null;
  download_password: string | null;
}

export interface TranscodeOutcome {
  url: string | null;
  durationSeconds: number | null;
  sizeBytes: number | null;
  renditions: Rendition[];
  storage: Record<string, string>;
  /** A DRM run: the key id (`drm_content_id`) and the licence URL with the token minted at COMPLETED (src/videos/drm-tokens.ts). */
  drm?: { contentId: string; licenseUrl: string } | null;
  /** Issue 12: the media URLs of `transcript.vtt` and `summary.txt`; absent or null when subtitles were not requested or transcription failed. */
  transcript?: { url: string; summaryUrl: string } | null;
  /** Issue 16: the media URLs of `thumbnail.jpg` and `storyboard.vtt`; absent for a source without video (or older videos). */
  posters?: { thumbnailUrl: string; storyboardUrl: string } | null;
  /** Issue 16: `{BASE_URL}/watch/<media token>`, the embeddable player page (src/videos/watch-routes.ts). */
  watchUrl?: string | null;
  /** Issue 27 item 4: what became of each static rendition asked for; absent on older videos. */
  staticRenditions?: StaticRendition[];
}

export interface VideoContext {
  id: string;
  orgId: string;
  title: string;
  kind: VideoKind;
  sourceUrl: string | null;
  drm: boolean;
  subtitles: boolean;
  tags: Record<string, unknown> | null;
  createdAt: string;
  progress: number;
  transcoderId: string | null;
  outcome: TranscodeOutcome | null;
  error: { code: string; message: string } | null;
  stream: { id: string; stream_key: string } | null;
  /** Issue 27 (src/playback): absent on older videos, which are public. A recording's comes from its stream. */
  playbackPolicy?: "public" | "signed";
  playbackRestrictionId?: string | null;
  /**
   * The machine queues its own pipeline (absent: a video whose creator queued its work, as rows stored before,
   * and bare fixtures): `source` is where the transcode reads (an upload, a recording's file, a fetched copy);
   * null: fetched from `sourceUrl` first.
   */
  pipeline?: { source: TranscodePayload | null };
  /**
   * Issue 27 item 5: a clip, a video derived from another: the parent video (`POST /videos/{id}/clips/`) or the live
   * stream (`POST /livestreams/{id}/clips/`) it was cut from, and the span in the parent's seconds. Absent otherwise.
   */
  derivedFrom?: { videoId: string | null; streamId: string | null; startTime: number; endTime: number };
  /**
   * Issue 29 item 1 (early playback): the master playlist's URL while the video is still transcoding, set by
   * PLAYABLE, cleared when the attempt restarts (its outputs are rebuilt), fails or is retried; absent on older
   * videos. `playableAnnounced`: VIDEO_PLAYABLE fired for this attempt (it fires once per attempt).
   */
  playableUrl?: string | null;
  playableAnnounced?: boolean;
  /**
   * Issue 27 item 4: the static renditions asked for (`static_renditions` of POST /videos/, else the
   * organization's default, resolved at registration). Absent (a live recording, older videos): the
   * organization's default when the transcode plans its outputs.
   */
  staticRenditions?: string[];
}

export function videoData(ctx: VideoContext, status: VideoStatus) {
  const o = ctx.outcome;
  const firstDownload = o?.renditions.find((r) => r.download_url) ?? null;
  return {
    video: {
      id: ctx.id,
      title: ctx.title,
      status,
      kind: ctx.kind,
      duration_seconds: o?.durationSeconds ?? null,
      size_bytes: o?.sizeBytes != null ? String(o.sizeBytes) : null,
      // Issue 29 item 1: while transcoding, the master playlist as soon as it plays (`playableUrl`).
      url: o?.url ?? ctx.playableUrl ?? null,
      drm: ctx.drm,
      playback_policy: ctx.playbackPolicy ?? "public",
      playback_restriction_id: ctx.playbackRestrictionId ?? null,
      drm_content_id: o?.drm?.contentId ?? null,
      // Issue 11's addition to spec 2.5: the ClearKey licence endpoint with a signed, expiring token; null without DRM.
      drm_license_url: o?.drm?.licenseUrl ?? null,
      download_url: firstDownload?.download_url ?? null,
      download_size_bytes: firstDownload?.download_size_bytes ?? null,
      download_quality: firstDownload?.quality ?? null,
      download_password: firstDownload?.download_password ?? null,
      transcript_url: o?.transcript?.url ?? null,
      summary_url: o?.transcript?.summaryUrl ?? null,
      source_video_id: ctx.derivedFrom?.videoId ?? null,
      source_stream_id: ctx.derivedFrom?.streamId ?? null,
      // Issue 27 item 4 (additive): each static rendition asked for, with its status.
      static_renditions: staticRenditionsOf(ctx, status === "ERROR"),
      ...(ctx.transcoderId ? { transcoder_id: ctx.transcoderId } : {}),
    },
    renditions: (o?.renditions ?? []).map((r) => ({
      quality: r.quality,
      url: r.url,
      download_url: r.download_url,
      download_size_bytes: r.download_size_bytes,
      download_password: r.download_password,
    })),
    error: ctx.error,
    storage: o ? o.storage : null,
    stream: ctx.stream,
  };
}

/*
 * Issue 27 item 4: a video's static renditions as its payload lists them (`video.static_renditions`): the
 * names asked for live in the context from registration (preparing), the transcode's outcome says what
 * became of each (ready with its URL and size, or errored with a stated reason).
 */

export type StaticRenditionStatus = "preparing" | "ready" | "errored";

export interface StaticRendition {
  /** As asked: `highest`, `audio-only` or a rung name (`720p`). */
  name: string;
  /** The MP4 (or, for `audio-only`, the M4A) under the video's media URL; null until ready. */
  url: string | null;
  status: StaticRenditionStatus;
  /** Decimal string, null until ready. */
  bytes: string | null;
  /** Why it is errored; null otherwise. */
  error: { code: string; message: string } | null;
}

/** The reasons a static rendition is not made, each with the message a user reads. */
export const STATIC_RENDITION_ERRORS = {
  DRM_PROTECTED: "A DRM video gets no clear copy: static renditions are not made for it.",
  NOT_IN_LADDER: "The name is not a rendition of the organization's ladder.",
  SOURCE_TOO_SMALL: "The source is smaller than this rendition: it was not produced.",
  NO_VIDEO: "The source has no video: only audio-only can be made.",
  NO_AUDIO: "The source has no audio.",
  TRANSCODE_FAILED: "The video's transcode failed.",
} as const;
export type StaticRenditionErrorCode = keyof typeof STATIC_RENDITION_ERRORS;

export function erroredStatic(name: string, code: StaticRenditionErrorCode): StaticRendition {
  return { name, url: null, status: "errored", bytes: null, error: { code, message: STATIC_RENDITION_ERRORS[code] } };
}

/**
 * The list a payload shows: the outcome's once the transcode completed; before, each name asked for is
 * preparing (errored at once for a DRM video: the rule is known at registration), or errored when the
 * video failed.
 */
export function staticRenditionsOf(ctx: { staticRenditions?: string[]; drm: boolean; outcome: { staticRenditions?: StaticRendition[] } | null }, failed: boolean): StaticRendition[] {
  if (ctx.outcome?.staticRenditions) return ctx.outcome.staticRenditions;
  return (ctx.staticRenditions ?? []).map((name) => {
    if (ctx.drm) return erroredStatic(name, "DRM_PROTECTED");
    if (failed) return erroredStatic(name, "TRANSCODE_FAILED");
    return { name, url: null, status: "preparing", bytes: null, error: null };
  });
}

export type VideoData = ReturnType<typeof videoData>;

/** The `transcode` work's payload: where its source is. */
export interface TranscodePayload {
  uploadId?: string | null;
  /** A file on disk: a live recording, or a source the fetch stage wrote into the work dir. */
  sourcePath?: string;
  /** `sourcePath` is the fetch stage's copy (fetch again if it went missing). */
  fetched?: boolean;
  /**
   * The fetched source's object key (`work/<video>/source.mp4`). `sourcePath` is absolute in the fetching
   * process's DATA_DIR: another process (its own DATA_DIR) cannot derive the key from it. Rows queued
   * before this field fall back to `sourcePath`.
   */
  sourceKey?: string;
  /**
   * Issue 27 item 5, a clip: the span of the source kept, in the source's seconds (frame accurate: the source step
   * cuts it before the plan). The source is `parentVideoId`'s kept original, or the file above (a live clip's
   * recording so far).
   */
  trim?: { start: number; end: number };
  /** A clip of a video: its source is that video's kept original (`originals/<parent>/source.*`). */
  parentVideoId?: string;
}
