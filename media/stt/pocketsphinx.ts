import { existsSync, statSync } from "node:fs";
import { SttError } from "./errors.ts";
import { silentLogger, type SttLogger } from "./logger.ts";
import { runTool } from "./spawn-tool.ts";
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

export function createPocketsphinxTranscriber(install: PocketsphinxInstall, logger: SttLogger = silentLogger): Transcriber {
  return {
    name: "pocketsphinx",
    async transcribe(wavPath, opts = {}) {
      const language = opts.language ?? "en";
      if (!/^en(-|$)/i.test(language)) throw new SttError("ENGINE_FAILED", `pocketsphinx has only an English model here; got language "${language}".`);
      const total = wavSeconds(wavPath);
      const started = performance.now();
      // The decoder logs every utterance on stderr: -logfn /dev/null keeps only real errors out of our way
      // (a failing run still exits non-zero and the stdout stays empty).
      const argv = [install.bin, "-infile", wavPath, "-time", "yes", "-hmm", install.hmm, "-lm", install.lm, "-dict", install.dict, "-logfn", "/dev/null"];
      const out = await runTool(argv, { signal: opts.signal });
      if (out.exitCode !== 0) throw new SttError("ENGINE_FAILED", `pocketsphinx exited with code ${out.exitCode}.`, out.stderrTail);
      const words = parsePocketsphinxOutput(out.stdout);
      // The CLI prints an utterance's words only when it ends, so progress is reported once, at the end.
      opts.onProgress?.(100);
      const seconds = (performance.now() - started) / 1000;
      logger.info("stt.pocketsphinx.done", { words: words.length, audio_seconds: total, elapsed_seconds: Math.round(seconds * 100) / 100 });
      return words;
    },
    async close() {},
  };
}
