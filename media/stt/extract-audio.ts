import { mkdirSync } from "node:fs";
import * as path from "node:path";
import { createWasmRunner } from "../transcoder/wasm/wasm-runner.ts";
import { createWasmWorkerPool, type WasmWorkerPool } from "../transcoder/wasm/wasm-worker-pool.ts";
import { cancelled, SttError } from "./errors.ts";
import { runTool } from "./spawn-tool.ts";

export interface ExtractOptions {
  signal?: AbortSignal;
  /** "auto" (default): native ffmpeg when on PATH, else ffmpeg.wasm. */
  backend?: "auto" | "native" | "wasm";
  /** A wasm pool to lease from (the transcoder's); without one a one-slot pool is made for this run. */
  wasmPool?: WasmWorkerPool;
}

/**
 * The first audio stream as the engines want it: 16 kHz, mono, signed 16-bit
 * PCM WAV. Metadata and ffmpeg's LIST chunk are left out (`bitexact`) so the
 * header is the plain 44 bytes. The output's directory is created.
 */
export function speechAudioArgs(input: string, wavOut: string): string[] {
  return [
    "-hide_banner",
    "-nostdin",
    "-y",
    "-i",
    input,
    "-map",
    "0:a:0",
    "-vn",
    "-ac",
    "1",
    "-ar",
    "16000",
    "-c:a",
    "pcm_s16le",
    "-map_metadata",
    "-1",
    "-fflags",
    "+bitexact",
    "-flags:a",
    "+bitexact",
    "-f",
    "wav",
    wavOut,
  ];
}

export async function extractSpeechAudio(input: string, wavOut: string, opts: ExtractOptions = {}): Promise<{ backend: "native" | "wasm" }> {
  if (opts.signal?.aborted) throw cancelled(opts.signal);
  mkdirSync(path.dirname(wavOut), { recursive: true });
  const native = opts.backend === "native" || (opts.backend !== "wasm" && Bun.which("ffmpeg") !== null);
  const { exitCode, stderrTail } = native ? await runTool(["ffmpeg", ...speechAudioArgs(input, wavOut)], { signal: opts.signal }) : await runWasm(input, wavOut, opts);
  if (exitCode !== 0) {
    // "Stream map '0:a:0' matches no streams": a silent video, told apart so the pipeline can write an empty transcript.
    if (stderrTail.some((l) => l.includes("matches no streams"))) throw new SttError("NO_AUDIO", "The media has no audio stream.", stderrTail);
    throw new SttError("AUDIO_EXTRACTION_FAILED", `ffmpeg could not extract the audio (exit ${exitCode}).`, stderrTail);
  }
  return { backend: native ? "native" : "wasm" };
}

/** ffmpeg.wasm, as the transcoder runs it: input's directory mounted at /in, the WAV's at /out. */
async function runWasm(input: string, wavOut: string, opts: ExtractOptions) {
  const pool = opts.wasmPool ?? createWasmWorkerPool({ size: 1 });
  try {
    const lease = await pool.acquire(opts.signal);
    try {
      const runner = createWasmRunner(lease);
      const paths = runner.toolPaths({ input, outDir: path.dirname(wavOut) });
      const args = speechAudioArgs(paths.input, path.posix.join(paths.outDir, path.basename(wavOut)));
      const signal = opts.signal ?? new AbortController().signal;
      const out = await runner.run({ tool: "ffmpeg", args, files: { input, outDir: path.dirname(wavOut) }, signal });
      return { exitCode: out.exitCode, stderrTail: out.stderrTail };
    } finally {
      lease.release();
    }
  } catch (e) {
    if (opts.signal?.aborted) throw cancelled(opts.signal);
    throw e;
  } finally {
    if (!opts.wasmPool) await pool.close();
  }
}
