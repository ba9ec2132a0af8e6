import { DomainError, InvalidInput, NotFound } from "../errors.ts";

export { DrmNotAvailable } from "../orgs/errors.ts";
export { InvalidInput, NotFound } from "../errors.ts";

/** The organization has no transcoding settings: nothing can be registered. */
export class TranscodeNotConfigured extends DomainError {
  readonly code = "TRANSCODE_NOT_CONFIGURED";
  constructor() {
    super("The organization has no transcoding settings.");
  }
}

/** The queue could not take the job (unreadable, or the insert failed). Safe to retry. */
export class TranscodeQueueFailed extends DomainError {
  readonly code = "TRANSCODE_QUEUE_FAILED";
  constructor(message = "The transcoding pipeline refused or timed out. Safe to retry.") {
    super(message);
  }
}

/** The queue holds as many active jobs as it accepts. Safe to retry once it drains. */
export class TranscodeQueueFull extends TranscodeQueueFailed {
  constructor() {
    super("The transcoding queue is full. Safe to retry.");
  }
}

/** `source_url` is not an http(s) URL. */
export class InvalidSourceUrl extends InvalidInput {
  constructor() {
    super({ source_url: "must be an http or https URL" });
  }
}

/** `source_url` names an upload this organization cannot register (not its own, or not finished). */
export class UploadNotRegistrable extends InvalidInput {
  constructor(readonly reason: "unknown" | "unfinished") {
    super({ source_url: reason === "unknown" ? "no upload of this organization at this URL" : "the upload has not finished" });
  }
}

/** An upload over the size cap (announced as `size_bytes`, or found while receiving the `body`). */
export class UploadTooLarge extends InvalidInput {
  constructor(field: "size_bytes" | "body", maxBytes: number) {
    super(field === "size_bytes" ? { size_bytes: `must be at most ${maxBytes}` } : { body: `must be at most ${maxBytes} bytes` });
  }
}

export class UploadEmpty extends InvalidInput {
  constructor() {
    super({ body: "must not be empty" });
  }
}

/** The presigned URL does not authorize this PUT: its signature is wrong, or it has expired. */
export class UploadUrlRefused extends DomainError {
  readonly code = "PERMISSION_DENIED";
  constructor(readonly reason: "signature" | "expired") {
    super(reason === "signature" ? "The upload URL's signature is invalid." : "The upload URL has expired.", ["upload.signature"]);
  }
}

/** The upload slot is unknown or already used (single use). */
export class UploadNotPending extends NotFound {
  constructor() {
    super("No pending upload at this URL (it may have been used already).");
  }
}

/** `POST /videos/{id}/retry/` on a video that is not in ERROR (still transcoding, or completed): nothing is queued. */
export class VideoNotRetryable extends DomainError {
  readonly code = "VIDEO_NOT_RETRYABLE";
  constructor(status: string) {
    super(`Only a video in ERROR can be retried; this one is ${status}.`, { status });
  }
}

/**
 * `POST /videos/{id}/retry/` on a clip in ERROR whose source is gone (issue 27): the parent video's kept original
 * (deleted with the parent) or a live clip's copy of the recording (swept by retention); nothing is queued.
 */
export class ClipSourceGone extends DomainError {
  readonly code = "CLIP_SOURCE_GONE";
  constructor(details: { source_video_id: string } | { source_stream_id: string }) {
    const what = "source_video_id" in details ? "the video it was cut from was deleted" : "its copy of the broadcast's recording was removed";
    super(`This clip cannot be retried: ${what}. Make a new clip instead.`, details);
  }
}

/** A licence token asked for a video registered without DRM: it has no key and no licence. */
export class VideoNotDrmProtected extends DomainError {
  readonly code = "DRM_NOT_AVAILABLE";
  constructor() {
    super("The video was registered without DRM: it has no licence. Register it with drm_enabled: true.", { drm_enabled: "was not set on this video" });
  }
}

/** `subtitles: true` but no speech-to-text engine is installed (media/stt): the reason names what to install. Nothing is created. */
export class SubtitlesUnavailable extends InvalidInput {
  constructor(reason: string) {
    super({ subtitles: reason }, "Transcripts are unavailable on this server.");
  }
}

/** `POST /videos/{id}/clips/` on a video that is not COMPLETED (still transcoding, or in ERROR): nothing is created. */
export class VideoNotCompleted extends DomainError {
  readonly code = "VIDEO_NOT_COMPLETED";
  constructor(status: string) {
    super(`Only a COMPLETED video can be clipped; this one is ${status}.`, { status });
  }
}

/** Issue 27 item 4: `static_renditions` names something that is not `highest`, `audio-only` or a rung of the ladder, or asks a DRM video for clear copies. */
export class StaticRenditionsRefused extends InvalidInput {
  constructor(reason: string) {
    super({ static_renditions: reason });
  }
}
