import { isTranscodeError, type ProbeResult, type TranscodeOptions, type TranscodeResult, type Transcoder } from "../../media/transcoder/index.ts";
import type { Transcriber } from "../../media/stt/types.ts";
import type { Logger } from "../log.ts";
import { PermanentWorkError } from "../work/work-runner.ts";
import type { OutputPlan } from "./transcode-plan.ts";
import { startTranscription, writeTranscriptOutputs } from "./transcript-outputs.ts";
import { asWorkError } from "./video-failure.ts";

/** The percents worth telling the video: at most one a second (100 always), each higher than the last. */
export function progressThrottle(send: (percent: number) => void, now: () => number = Date.now): (percent: number) => void {
  let lastSent = 0;
  let lastPercent = 0;
  return (percent) => {
    const t = now();
    if (percent < 100 && t - lastSent < 1000) return;
    if (Math.floor(percent) <= lastPercent) return;
    lastSent = t;
    lastPercent = Math.floor(percent);
    send(lastPercent);
  };
}

export interface EncodeInput {
  transcoder: Transcoder;
  source: string;
  outDir: string;
  workDir: string;
  plan: OutputPlan;
  probe: ProbeResult;
  videoId: string;
  title: string;
  /** The content key (DRM videos): to the packager and nowhere else. */
  drmKey: { keyId: string; key: string } | null;
  /** Subtitles asked for, and the engine (null: none installed). */
  transcribe: { engine: Transcriber } | null;
  signal: AbortSignal;
  timeoutMs: number;
  onProgress: (percent: number) => void;
  /** Issue 29 item 1: the ladder's HLS as it grows (media/transcoder/early-hls.ts), stored and reported by transcode-early.ts. */
  onOutputs?: TranscodeOptions["onOutputs"];
  /** The encoder finished (before the transcript is awaited): the realtime factor's wall time ends here. */
  onEncoded?: (result: TranscodeResult) => void;
  logger: Logger;
}

/**
 * Step 3 of a transcode, "encode": the ladder, downloads and posters into `outDir` (posters from the cheapest
 * rung's run; DRM videos too: images are not the protected content) and, beside it on the same signal, the
 * speech transcribed (COMPLETED waits only for the slower of the two). Answers the encoder's result and the
 * transcript's bytes (null: none written; a failed transcription does not fail the video).
 */
export async function encode(input: EncodeInput): Promise<{ result: TranscodeResult; transcriptBytes: number | null }> {
  const { transcoder, source, outDir, signal, logger, videoId } = input;
  const transcription =
    input.transcribe && input.probe.hasAudio ? startTranscription({ transcriber: input.transcribe.engine, input: source, workDir: input.workDir, signal, timeoutMs: input.timeoutMs }) : null;
  // Static renditions and the master's audio-only variant (issue 27 item 4): stream copies in the job's last run.
  const copies = { staticRenditions: input.plan.statics.request, audioVariant: true };
  const job = { input: source, outDir, ladder: input.plan.ladder, downloads: input.plan.downloads, posters: true, ...copies, ...(input.drmKey ? { drm: input.drmKey } : {}) };
  const result = await transcoder.transcode(job, { signal, timeoutMs: input.timeoutMs, onProgress: input.onProgress, onOutputs: input.onOutputs }).catch((err) => {
    transcription?.cancel();
    // The tool's last lines are for operators (the video's message says what failed in the user's terms).
    if (isTranscodeError(err) && err.logTail.length > 0) logger.warn("Transcode tool output", { video_id: videoId, code: err.code, log_tail: err.logTail });
    throw asWorkError(err);
  });
  input.onEncoded?.(result);
  // Never serve clear output as a protected video: a DRM job must have produced the encrypted DASH manifest.
  if (input.drmKey && !result.masterPlaylist.endsWith(".mpd")) throw new PermanentWorkError("DRM_PACKAGING_FAILED", "DRM packaging produced no DASH manifest.");
  if (!transcription) return { result, transcriptBytes: null };
  const done = await transcription.result;
  if (signal.aborted) throw signal.reason;
  if (!done.ok) {
    logger.warn("Transcript failed; the video completes without it", { video_id: videoId, err: done.error });
    return { result, transcriptBytes: null };
  }
  try {
    const durationSeconds = result.durationSeconds ?? input.probe.durationSeconds ?? 0;
    const { bytes } = await writeTranscriptOutputs({ outDir, words: done.words, durationSeconds, title: input.title, manifest: result.masterPlaylist });
    logger.info("Transcript written", { video_id: videoId, engine: input.transcribe!.engine.name, words: done.words.length, transcribe_ms: Math.round(done.ms), bytes });
    return { result, transcriptBytes: bytes };
  } catch (err) {
    logger.warn("Transcript failed; the video completes without it", { video_id: videoId, err });
    return { result, transcriptBytes: null };
  }
}
