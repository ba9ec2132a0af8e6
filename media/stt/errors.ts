/** Failures of speech-to-text, named so the pipeline can log and map them. */
export type SttErrorCode =
  /** No engine: neither pocketsphinx with its model nor STT_MODEL_PATH (see sttUnavailableReason). */
  | "ENGINE_UNAVAILABLE"
  /** The engine ran and failed (non-zero exit, unreadable output, model refused). */
  | "ENGINE_FAILED"
  /** ffmpeg could not produce the 16 kHz mono WAV (no audio stream, broken input). */
  | "AUDIO_EXTRACTION_FAILED"
  /** The input has no audio stream: nothing to transcribe (the pipeline writes an empty transcript). */
  | "NO_AUDIO"
  /** The caller's AbortSignal fired. */
  | "CANCELLED";

export class SttError extends Error {
  override readonly name = "SttError";
  constructor(
    readonly code: SttErrorCode,
    message: string,
    /** Last lines of the tool's log, for operators. */
    readonly logTail: string[] = [],
  ) {
    super(message);
  }
}

export function isSttError(e: unknown, code?: SttErrorCode): e is SttError {
  return e instanceof SttError && (code === undefined || e.code === code);
}

export function cancelled(signal?: AbortSignal): SttError {
  const reason = signal?.reason;
  return reason instanceof SttError ? reason : new SttError("CANCELLED", "Transcription was cancelled.");
}
