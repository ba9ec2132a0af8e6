/**
 * Runs one image cut (image-args.ts) on a backend: the system's ffmpeg when
 * it is on PATH, else ffmpeg.wasm in a one-worker pool made on first use (a
 * machine without ffmpeg still answers, ~5-10x slower). The input is one
 * local file (the caller joins the segments it needs); the output is written
 * into `outDir`.
 */
import { basename, dirname, join } from "node:path";
import { mkdir, stat } from "node:fs/promises";
import type { FfmpegRunner } from "../transcoder/ffmpeg-runner.ts";
import { hasNativeFfmpeg } from "../transcoder/has-native-ffmpeg.ts";
import { createNativeRunner } from "../transcoder/native-runner.ts";
import { createWasmRunner } from "../transcoder/wasm/wasm-runner.ts";
import { createWasmWorkerPool, type WasmWorkerPool } from "../transcoder/wasm/wasm-worker-pool.ts";
import { imageArgs, type ImageSpec } from "./image-args.ts";

export type ImageBackend = "native" | "wasm";

export interface ImageRenderer {
  readonly backend: ImageBackend;
  /** Writes `outDir/<name>`; rejects with ffmpeg's last lines when it fails or writes nothing. */
  render(input: string, outDir: string, name: string, spec: ImageSpec, signal: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

export function createImageRenderer(opts: { backend?: "auto" | ImageBackend } = {}): ImageRenderer {
  const backend: ImageBackend = opts.backend === "wasm" || (opts.backend !== "native" && !hasNativeFfmpeg()) ? "wasm" : "native";
  const native = backend === "native" ? createNativeRunner() : null;
  let pool: WasmWorkerPool | null = null;

  async function run(runner: FfmpegRunner, input: string, outDir: string, name: string, spec: ImageSpec, signal: AbortSignal) {
    await mkdir(outDir, { recursive: true });
    const seen = runner.toolPaths({ input, outDir });
    const args = imageArgs(join(dirname(seen.input), basename(input)), join(seen.outDir, name), spec);
    const out = await runner.run({ tool: "ffmpeg", args, files: { input, outDir }, signal });
    const made = await stat(join(outDir, name)).catch(() => null);
    if (out.exitCode !== 0 || !made || made.size === 0) throw new Error(`ffmpeg could not cut the image (exit ${out.exitCode}): ${out.stderrTail.slice(-3).join(" | ")}`);
    return join(outDir, name);
  }

  return {
    backend,
    async render(input, outDir, name, spec, signal) {
      if (native) return run(native, input, outDir, name, spec, signal);
      pool ??= createWasmWorkerPool({ size: 1 });
      const lease = await pool.acquire();
      try {
        return await run(createWasmRunner(lease), input, outDir, name, spec, signal);
      } finally {
        lease.release();
      }
    },
    async close() {
      await pool?.close();
      pool = null;
    },
  };
}
