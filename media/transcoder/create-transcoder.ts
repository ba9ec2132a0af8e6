import { createNativeTranscoder } from "./create-native-transcoder.ts";
import { createWasmTranscoder } from "./create-wasm-transcoder.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";
import { TranscodeError } from "./transcode-error.ts";
import type { Backend, CreateTranscoderOptions, Transcoder } from "./types.ts";

/** Picks the backend: 'auto' uses native ffmpeg when it is installed (~5x cheaper), else wasm. */
export function resolveBackend(requested: CreateTranscoderOptions["backend"] = "auto"): Backend {
  if (requested === "wasm" || requested === "native") return requested;
  if (requested !== "auto") throw new TranscodeError("INVALID_JOB", `unknown backend: ${String(requested)}`);
  return hasNativeFfmpeg() ? "native" : "wasm";
}

export function createTranscoder(opts: CreateTranscoderOptions = {}): Transcoder {
  const backend = resolveBackend(opts.backend);
  if (backend === "native" && !hasNativeFfmpeg()) throw new TranscodeError("INVALID_JOB", 'backend "native" needs ffmpeg and ffprobe on PATH');
  opts.logger?.({ event: "transcoder.created", backend, requested: opts.backend ?? "auto" });
  return backend === "native" ? createNativeTranscoder(opts) : createWasmTranscoder(opts);
}
