import { basename } from "node:path";
import { isTranscodeError } from "../../media/transcoder/index.ts";
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
 * webhooks): a stable code and a message for humans, without server paths.
 * Every failure of the fetch and transcode stages is built here.
 */
export function videoFailure(err: unknown, roots: string[] = []): { code: string; message: string } {
  let code = "TRANSCODE_FAILED";
  const message: string = String((err as Error)?.message ?? err ?? "") || "Transcoding failed.";
  if (err instanceof PermanentWorkError) code = err.code;
  else if (isTranscodeError(err)) code = TRANSCODER_CODES[err.code] ?? "TRANSCODE_FAILED";
  return { code, message: sanitizeFailureMessage(message, roots) || "Transcoding failed." };
}

/** Bad input and timeouts will fail the same way again; anything else may be transient. */
export function asWorkError(err: unknown): unknown {
  if (isTranscodeError(err, "INPUT_UNSUPPORTED") || isTranscodeError(err, "TIMEOUT") || isTranscodeError(err, "INVALID_JOB") || isTranscodeError(err, "PACKAGER_UNAVAILABLE")) {
    const f = videoFailure(err);
    return new PermanentWorkError(f.code, f.message);
  }
  return err;
}
