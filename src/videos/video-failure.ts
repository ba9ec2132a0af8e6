import { basename } from "node:path";
import { isTranscodeError, type TranscodeError } from "../../media/transcoder/index.ts";
import { PermanentWorkError } from "../work/work-runner.ts";

const TRANSCODER_CODES: Record<string, string> = {
  INPUT_UNSUPPORTED: "INPUT_UNSUPPORTED",
  TIMEOUT: "TRANSCODE_TIMEOUT",
  CANCELLED: "TRANSCODE_CANCELLED",
  FFMPEG_FAILED: "TRANSCODE_FAILED",
  INVALID_JOB: "TRANSCODE_FAILED",
  // DRM jobs (issue 11): no Shaka Packager binary for this platform will not change on a retry; a packaging failure may.
  PACKAGER_UNAVAILABLE: "DRM_PACKAGER_UNAVAILABLE",
  PACKAGING_FAILED: "DRM_PACKAGING_FAILED",
};

export const UNREADABLE_SOURCE = "The source is not a video or audio file this service can read.";

/**
 * Issue 23 (17): what a transcoder failure means to the person who registered the video. The tool's own
 * words (ffmpeg's demuxer names, memory addresses, option names, exit codes) are for operators: they stay
 * in the logs (the work runner's "Work failed for good" line carries the error and its `cause`; the
 * transcode handler logs ffmpeg's last lines), never in `error.message`.
 */
function transcoderMessage(err: TranscodeError): string {
  switch (err.code) {
    case "INPUT_UNSUPPORTED":
      if (/^input is empty/.test(err.message)) return "The source file is empty.";
      if (/cannot be decoded/.test(err.message)) return "The source's audio or video is encoded in a format this service cannot decode.";
      if (/^input (does not exist|is not a file)/.test(err.message)) return "The source file is missing.";
      return UNREADABLE_SOURCE;
    case "TIMEOUT":
      return "Transcoding took longer than the time allowed and was stopped.";
    case "CANCELLED":
      return "Transcoding was cancelled.";
    case "PACKAGER_UNAVAILABLE":
      return "DRM packaging is not available on this server.";
    case "PACKAGING_FAILED":
      return "DRM packaging of the transcoded video failed.";
    case "INVALID_JOB":
      return "Transcoding could not start: the service's transcoding settings for this video are invalid.";
    default:
      return "Transcoding failed while encoding the source.";
  }
}

/** Any other error (a bug, a storage or database failure): the user learns it was ours, the log has the rest. */
const INTERNAL_MESSAGE = "Transcoding failed because of an error in the service.";

/** At most this much of a message reaches the video and its webhooks. */
const MAX_MESSAGE = 500;

/**
 * An absolute file path inside a message: a `/` that starts a word (not the
 * `//` or the path of a URL, which follow `:` `/` or a word character), up to
 * whitespace, a quote, a bracket, a comma, or a `:` that ends the path
 * (`/data/work/x/source.mp4: Invalid data`).
 */
const ABSOLUTE_PATH = /(?<![\w:/.%~-])\/[^\s'"`()<>[\]{}]+/g;

/**
 * Removes server paths from a failure message: the service's own directories
 * (DATA_DIR and the temporary directory) and any absolute path become the
 * file's base name, so `ffprobe` saying "/srv/data/work/vid_x/source.mp4:
 * Invalid data" reads "source.mp4: Invalid data".
 */
export function sanitizeFailureMessage(message: string, roots: string[] = []): string {
  let out = message;
  for (const root of roots.filter((r) => r.length > 1).sort((a, b) => b.length - a.length)) {
    out = out.split(root.replace(/\/+$/, "") + "/").join("/");
  }
  out = out.replace(ABSOLUTE_PATH, (match) => {
    const path = match.replace(/[:,;.]+$/, "");
    return (basename(path) || "file") + match.slice(path.length);
  });
  out = out.replace(/\s+/g, " ").trim();
  return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE - 1)}…` : out;
}

/**
 * The `error` of VIDEO_TRANSCODING_FAILED (stored on the video and sent in
 * webhooks): a stable code and a message in the user's terms, without server
 * paths or tool output. Every failure of the fetch and transcode stages is
 * built here. A PermanentWorkError's message is the service's own sentence
 * (fetch-source.ts, the handlers); a transcoder error's is replaced by what
 * its code means; anything else is an internal error.
 */
export function videoFailure(err: unknown, roots: string[] = []): { code: string; message: string } {
  if (err instanceof PermanentWorkError) return { code: err.code, message: sanitizeFailureMessage(err.message, roots) || INTERNAL_MESSAGE };
  if (isTranscodeError(err)) return { code: TRANSCODER_CODES[err.code] ?? "TRANSCODE_FAILED", message: transcoderMessage(err) };
  return { code: "TRANSCODE_FAILED", message: INTERNAL_MESSAGE };
}

/** A PermanentWorkError in the user's terms that keeps the original as its `cause` (logged, never stored on the video). */
export function permanentFailure(code: string, message: string, cause: unknown): PermanentWorkError {
  const err = new PermanentWorkError(code, message);
  err.cause = cause;
  return err;
}

/** Bad input and timeouts will fail the same way again; anything else may be transient. */
export function asWorkError(err: unknown): unknown {
  if (isTranscodeError(err, "INPUT_UNSUPPORTED") || isTranscodeError(err, "TIMEOUT") || isTranscodeError(err, "INVALID_JOB") || isTranscodeError(err, "PACKAGER_UNAVAILABLE")) {
    const f = videoFailure(err);
    return permanentFailure(f.code, f.message, err);
  }
  return err;
}
