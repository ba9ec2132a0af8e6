import { existsSync, readdirSync, statSync } from "node:fs";
import * as path from "node:path";
import { cancelled, SttError } from "./errors.ts";
import { silentLogger, type SttLogger } from "./logger.ts";
import type { Transcriber, Word } from "./types.ts";

/**
 * The whisper backend: sherpa-onnx-node (Apache-2.0; 32 MB for linux-x64,
 * prebuilt, no install script, no download at run time; loads under Bun and
 * Node). @fugood/whisper.node was the alternative: it pulls its CUDA and
 * Vulkan variants too (266 MB) unless installed with --omit=optional, which
 * also drops its CPU binary. No model ships: the operator points
 * STT_MODEL_PATH at a sherpa-onnx whisper model (the directory of its
 * release tarball, e.g. sherpa-onnx-whisper-tiny.en, or its encoder file):
 * `*encoder*.onnx`, `*decoder*.onnx`, `*tokens.txt`.
 */
export interface WhisperModelFiles {
  encoder: string;
  decoder: string;
  tokens: string;
}

/** The model's three files, preferring the int8 ones, or null when STT_MODEL_PATH does not name a usable model. */
export function findWhisperModel(modelPath: string): WhisperModelFiles | null {
  if (!existsSync(modelPath)) return null;
  const dir = statSync(modelPath).isDirectory() ? modelPath : path.dirname(modelPath);
  const files = readdirSync(dir).sort((a, b) => Number(b.includes("int8")) - Number(a.includes("int8")));
  const pick = (re: RegExp) => files.find((f) => re.test(f));
  const encoder = pick(/encoder.*\.onnx$/);
  const decoder = pick(/decoder.*\.onnx$/);
  const tokens = pick(/tokens\.txt$/);
  if (!encoder || !decoder || !tokens) return null;
  return { encoder: path.join(dir, encoder), decoder: path.join(dir, decoder), tokens: path.join(dir, tokens) };
}

/** Whether the native addon is installed (an optionalDependency) and loads. */
export async function loadSherpa(): Promise<SherpaModule | null> {
  try {
    // A name in a variable: the package is optional and ships no types.
    const name = "sherpa-onnx-node";
    return (await import(name)) as SherpaModule;
  } catch {
    return null;
  }
}

interface SherpaModule {
  OfflineRecognizer: new (
    config: unknown,
  ) => {
    createStream(): { acceptWaveform(w: { samples: Float32Array; sampleRate: number }): void };
    decode(stream: unknown): void;
    getResult(stream: unknown): { text: string; timestamps?: number[]; tokens?: string[] };
  };
  readWave(path: string): { samples: Float32Array; sampleRate: number };
}

/**
 * Whisper decodes at most 30 s at a time and sherpa-onnx reports no word
 * times for it, so the audio is cut into WINDOW_SECONDS windows and each
 * window's words are spread over it in proportion to their length: cue
 * times are then right to within a window's share, good enough for captions
 * of a few seconds but coarser than pocketsphinx's.
 */
const WINDOW_SECONDS = 8;

export function spreadWords(text: string, start: number, end: number): Word[] {
  const tokens = text.split(/\s+/).filter((t) => t !== "");
  const total = tokens.reduce((n, t) => n + t.length + 1, 0);
  const words: Word[] = [];
  let at = start;
  for (const t of tokens) {
    const d = ((end - start) * (t.length + 1)) / total;
    words.push({ text: t, start: at, end: at + d });
    at += d;
  }
  return words;
}

export async function createWhisperTranscriber(modelPath: string, logger: SttLogger = silentLogger): Promise<Transcriber | null> {
  const files = findWhisperModel(modelPath);
  if (!files) {
    logger.warn("stt.whisper.model_not_found", { model_path: modelPath });
    return null;
  }
  const sherpa = await loadSherpa();
  if (!sherpa) {
    logger.warn("stt.whisper.addon_missing", { hint: "npm install sherpa-onnx-node" });
    return null;
  }
  const recognizer = new sherpa.OfflineRecognizer({
    featConfig: { sampleRate: 16000, featureDim: 80 },
    modelConfig: { whisper: { encoder: files.encoder, decoder: files.decoder, language: "en", task: "transcribe" }, tokens: files.tokens, numThreads: 1, provider: "cpu", debug: 0 },
  });
  return {
    name: "whisper",
    async transcribe(wavPath, opts = {}) {
      let wave: { samples: Float32Array; sampleRate: number };
      try {
        wave = sherpa.readWave(wavPath);
      } catch (e) {
        throw new SttError("ENGINE_FAILED", `whisper could not read ${path.basename(wavPath)}: ${(e as Error).message}`);
      }
      const words: Word[] = [];
      const step = WINDOW_SECONDS * wave.sampleRate;
      for (let i = 0; i < wave.samples.length; i += step) {
        if (opts.signal?.aborted) throw cancelled(opts.signal);
        const stream = recognizer.createStream();
        stream.acceptWaveform({ samples: wave.samples.subarray(i, i + step), sampleRate: wave.sampleRate });
        recognizer.decode(stream);
        const { text } = recognizer.getResult(stream);
        const start = i / wave.sampleRate;
        const end = Math.min(wave.samples.length, i + step) / wave.sampleRate;
        words.push(...spreadWords(text, start, end));
        opts.onProgress?.(Math.min(100, Math.round(((i + step) / wave.samples.length) * 100)));
        // Decoding blocks the thread: yield between windows so aborts and other work get a turn.
        await Bun.sleep(0);
      }
      return words;
    },
    async close() {},
  };
}
