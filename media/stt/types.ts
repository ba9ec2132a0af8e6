/** Public shapes of speech-to-text. See README.md for the decisions behind them. */

/** One recognised word with its time in the media, in seconds. */
export interface Word {
  text: string;
  start: number;
  end: number;
  /** 0..1 when the engine reports one. */
  confidence?: number;
}

export interface TranscribeOptions {
  signal?: AbortSignal;
  /** BCP 47 language of the speech; engines without that model refuse it. Default "en". */
  language?: string;
  /** 0..100, monotonic. */
  onProgress?: (percent: number) => void;
}

/**
 * A speech-to-text engine behind one interface: Debian's pocketsphinx, or a
 * whisper model named by STT_MODEL_PATH. Input: a 16 kHz mono 16-bit PCM WAV
 * file (see `extractSpeechAudio`); output: the words in time order.
 */
export interface Transcriber {
  /** The engine's name, as GET /organization/ reports it in `features.transcripts` (e.g. "pocketsphinx", "whisper"). */
  readonly name: string;
  transcribe(wavPath: string, opts?: TranscribeOptions): Promise<Word[]>;
  close(): Promise<void>;
}
