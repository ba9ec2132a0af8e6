import { silentLogger, type SttLogger } from "./logger.ts";
import { createPocketsphinxTranscriber, findPocketsphinx, POCKETSPHINX_APT } from "./pocketsphinx.ts";
import type { Transcriber } from "./types.ts";
import { createWhisperTranscriber } from "./whisper.ts";

export interface CreateTranscriberOptions {
  /** A whisper model (STT_MODEL_PATH); when set and usable it wins over pocketsphinx. */
  modelPath?: string;
  logger?: SttLogger;
}

/**
 * The best engine this machine has: whisper when `modelPath` names a usable
 * model and sherpa-onnx-node is installed, else Debian's pocketsphinx, else
 * null (subtitles are then refused with sttUnavailableReason()). A model path
 * that does not work is logged and skipped, not fatal: the service still
 * starts.
 */
export async function createTranscriber(opts: CreateTranscriberOptions = {}): Promise<Transcriber | null> {
  const logger = opts.logger ?? silentLogger;
  if (opts.modelPath) {
    const whisper = await createWhisperTranscriber(opts.modelPath, logger);
    if (whisper) return whisper;
  }
  const ps = findPocketsphinx();
  return ps ? createPocketsphinxTranscriber(ps, logger) : null;
}

/** What to install, for the 422 `details.subtitles` when there is no engine. */
export function sttUnavailableReason(): string {
  return `No speech-to-text engine is installed on this server: install Debian's pocketsphinx (${POCKETSPHINX_APT}) or set STT_MODEL_PATH to a sherpa-onnx whisper model.`;
}
