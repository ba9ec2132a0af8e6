export type TranscodeErrorCode =
  /** The input is not media ffmpeg can read, or has neither video nor audio. */
  | "INPUT_UNSUPPORTED"
  /** The job ran longer than timeoutMs; its process or worker was killed. */
  | "TIMEOUT"
  /** The caller's AbortSignal fired, or the transcoder was closed. */
  | "CANCELLED"
  /** ffmpeg exited non-zero or produced no usable output. */
  | "FFMPEG_FAILED"
  /** The job itself is malformed (relative paths, empty ladder, a DRM key that is not 32 hex digits, ...). */
  | "INVALID_JOB"
  /** A DRM job on a machine without a Shaka Packager binary (npm shaka-packager has none for this platform). */
  | "PACKAGER_UNAVAILABLE"
  /** Shaka Packager failed on a DRM job's encodes (non-zero exit, missing or unexpected output). */
  | "PACKAGING_FAILED";

export class TranscodeError extends Error {
  override readonly name = "TranscodeError";
  constructor(
    readonly code: TranscodeErrorCode,
    message: string,
    /** Last lines of ffmpeg's (or the packager's) log, when there is one; for operators, not end users. */
    readonly logTail: string[] = [],
  ) {
    super(message);
  }
}

export function isTranscodeError(e: unknown, code?: TranscodeErrorCode): e is TranscodeError {
  return e instanceof TranscodeError && (code === undefined || e.code === code);
}
