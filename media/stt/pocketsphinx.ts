import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import * as path from "node:path";
import { cancelled, SttError } from "./errors.ts";
import { silentLogger, type SttLogger } from "./logger.ts";
import { runTool } from "./spawn-tool.ts";
import { splitWavAtPauses } from "./split-wav.ts";
import type { Transcriber, Word } from "./types.ts";

/**
 * Debian 12 ships pocketsphinx 0.8+5prealpha: the CLI is
 * `pocketsphinx_continuous` (the newer single `pocketsphinx` CLI with JSON
 * output is 5.0, not in bookworm). Its model is package pocketsphinx-en-us.
 */
export const POCKETSPHINX_BIN = "pocketsphinx_continuous";
export const POCKETSPHINX_MODEL_DIR = "/usr/share/pocketsphinx/model/en-us";
export const POCKETSPHINX_APT = "apt-get install -y pocketsphinx pocketsphinx-en-us";

export interface PocketsphinxInstall {
  bin: string;
  hmm: string;
  lm: string;
  dict: string;
}

/** The binary on PATH and its en-us model on disk, or null when either is missing. */
export function findPocketsphinx(modelDir = POCKETSPHINX_MODEL_DIR): PocketsphinxInstall | null {
  const bin = Bun.which(POCKETSPHINX_BIN);
  if (!bin) return null;
  const install = { bin, hmm: `${modelDir}/en-us`, lm: `${modelDir}/en-us.lm.bin`, dict: `${modelDir}/cmudict-en-us.dict` };
  return existsSync(install.hmm) && existsSync(install.lm) && existsSync(install.dict) ? install : null;
}

/** `<s>`, `</s>`, `<sil>`, `<unk>`, `[NOISE]`, `[SPEECH]`, `++GARBAGE++`: markers, not words. */
const FILLER = /^(<.*>|\[.*\]|\+\+.*\+\+)$/;
/** One `-time yes` line: `word start end confidence` (times in seconds from the file's start). */
const WORD_LINE = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?)$/;

/**
 * Parses `pocketsphinx_continuous -time yes` stdout: per utterance one
 * hypothesis line (plain words, ignored) then one line per segment. Fillers
 * are dropped and alternate pronunciations (`the(2)`) lose their suffix.
 */
export function parsePocketsphinxOutput(stdout: string): Word[] {
  const words: Word[] = [];
  for (const line of stdout.split("\n")) {
    const m = WORD_LINE.exec(line.trim());
    if (!m) continue;
    const [, raw = "", start, end, conf] = m;
    if (FILLER.test(raw)) continue;
    const text = raw.replace(/\(\d+\)$/, "");
    if (text === "") continue;
    words.push({ text, start: Number(start), end: Number(end), confidence: Math.min(1, Math.max(0, Number(conf))) });
  }
  return words.sort((a, b) => a.start - b.start);
}

/** Seconds of a 16 kHz mono s16 WAV from its size (44-byte header), for progress. */
function wavSeconds(path: string): number {
  try {
    return Math.max(0, statSync(path).size - 44) / 32000;
  } catch {
    return 0;
  }
}

export interface PocketsphinxOptions {
  /**
   * The decoder is single-threaded (~0.4x realtime): audio longer than
   * PARALLEL_MIN_SECONDS is cut at pauses into this many pieces decoded at
   * once. Default: the machine's cores, at most 4.
   */
  parallel?: number;
}

/** Below this, one process: a piece has to be long enough for the decoder's cepstral mean to settle. */
export const PARALLEL_MIN_SECONDS = 30;

export function createPocketsphinxTranscriber(install: PocketsphinxInstall, logger: SttLogger = silentLogger, popts: PocketsphinxOptions = {}): Transcriber {
  const parallel = Math.max(1, popts.parallel ?? Math.min(4, navigator.hardwareConcurrency ?? 1));

  async function decode(wavPath: string, offset: number, signal?: AbortSignal): Promise<Word[]> {
    // The decoder logs every utterance on stderr: -logfn /dev/null keeps only real errors out of our way
    // (a failing run still exits non-zero and the stdout stays empty).
    const argv = [install.bin, "-infile", wavPath, "-time", "yes", "-hmm", install.hmm, "-lm", install.lm, "-dict", install.dict, "-logfn", "/dev/null"];
    const out = await runTool(argv, { signal });
    if (out.exitCode !== 0) throw new SttError("ENGINE_FAILED", `pocketsphinx exited with code ${out.exitCode}.`, out.stderrTail);
    return parsePocketsphinxOutput(out.stdout).map((w) => ({ ...w, start: w.start + offset, end: w.end + offset }));
  }

  return {
    name: "pocketsphinx",
    async transcribe(wavPath, opts = {}) {
      const language = opts.language ?? "en";
      if (!/^en(-|$)/i.test(language)) throw new SttError("ENGINE_FAILED", `pocketsphinx has only an English model here; got language "${language}".`);
      const total = wavSeconds(wavPath);
      const started = performance.now();
      const parts = total >= PARALLEL_MIN_SECONDS ? Math.min(parallel, Math.floor(total / (PARALLEL_MIN_SECONDS / 2))) : 1;
      let words: Word[];
      if (parts <= 1) {
        words = await decode(wavPath, 0, opts.signal);
      } else {
        const dir = mkdtempSync(path.join(path.dirname(wavPath), ".ps-"));
        try {
          const pieces = splitWavAtPauses(wavPath, parts, path.join(dir, "piece"));
          // One fails or is aborted: the others are killed too.
          const ac = new AbortController();
          const onAbort = () => ac.abort(opts.signal?.reason);
          opts.signal?.addEventListener("abort", onAbort, { once: true });
          try {
            const results = await Promise.all(
              pieces.map((p) =>
                decode(p.path, p.offset, ac.signal).catch((e) => {
                  ac.abort(e);
                  throw e;
                }),
              ),
            );
            words = results.flat();
          } finally {
            opts.signal?.removeEventListener("abort", onAbort);
          }
        } catch (e) {
          if (opts.signal?.aborted) throw cancelled(opts.signal);
          throw e;
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
      // The CLI prints an utterance's words only when it ends, so progress is reported once, at the end.
      opts.onProgress?.(100);
      const seconds = (performance.now() - started) / 1000;
      logger.info("stt.pocketsphinx.done", { words: words.length, audio_seconds: total, processes: parts, elapsed_seconds: Math.round(seconds * 100) / 100 });
      return words;
    },
    async close() {},
  };
}
