/**
 * Runs one image cut (image-args.ts) on a backend: the system's ffmpeg when
 * it is on PATH, else ffmpeg.wasm in a one-worker pool made on first use (a
 * machine without ffmpeg still answers, ~5-10x slower). The input is one
 * local file (the caller joins the segments it needs); the output is written
 * into `outDir`.
 */
import { basename, dirname, join } from "node:path";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import type { FfmpegRunner } from "../transcoder/ffmpeg-runner.ts";
import { hasNativeFfmpeg } from "../transcoder/has-native-ffmpeg.ts";
import { withParentDeathSignal } from "../transcoder/child-processes.ts";
import { createNativeRunner } from "../transcoder/native-runner.ts";
import { createWasmRunner } from "../transcoder/wasm/wasm-runner.ts";
import { createWasmWorkerPool, type WasmWorkerPool } from "../transcoder/wasm/wasm-worker-pool.ts";
import { imageArgs, type ImageSpec, pipedStillArgs, type StillSpec } from "./image-args.ts";
import { FRAME_AT_SECONDS, framePackets } from "./ts-frame-packets.ts";
import { createWarmFfmpeg, type WarmFfmpeg } from "./warm-ffmpeg.ts";

export type ImageBackend = "native" | "wasm";

export interface ImageRenderer {
  readonly backend: ImageBackend;
  /** Writes `outDir/<name>`; rejects with ffmpeg's last lines when it fails or writes nothing. */
  render(input: string, outDir: string, name: string, spec: ImageSpec, signal: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

/** `piped: false` cuts every still from its whole segment (the bench compares the two ways side by side). */
export function createImageRenderer(opts: { backend?: "auto" | ImageBackend; piped?: boolean } = {}): ImageRenderer {
  const backend: ImageBackend = opts.backend === "wasm" || (opts.backend !== "native" && !hasNativeFfmpeg()) ? "wasm" : "native";
  const native = backend === "native" ? createNativeRunner() : null;
  const warm: WarmFfmpeg | null = native && opts.piped !== false ? createWarmFfmpeg({ argv0: withParentDeathSignal(["ffmpeg"]) }) : null;
  let pool: WasmWorkerPool | null = null;

  /**
   * A still from one MPEG-TS segment, native: only the frames it needs (ts-frame-packets.ts) on an ffmpeg started
   * before the request (warm-ffmpeg.ts). Null when the segment is not one that path reads (the caller cuts as before).
   */
  async function piped(warmed: WarmFfmpeg, input: string, outDir: string, name: string, spec: StillSpec, signal: AbortSignal): Promise<string | null> {
    if (spec.inputSeek || !input.endsWith(".ts")) return null;
    const packets = framePackets(new Uint8Array(await readFile(input)), spec.offset);
    if (!packets) return null;
    const image = await warmed.run(pipedStillArgs(spec, FRAME_AT_SECONDS), packets, signal).output;
    await mkdir(outDir, { recursive: true });
    await writeFile(join(outDir, name), image);
    return join(outDir, name);
  }

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
      if (native && warm && spec.kind === "thumbnail") {
        // A still the piped path cannot make (an odd segment) is cut from the whole segment, as every still was before.
        const made = await piped(warm, input, outDir, name, spec, signal).catch((err) => {
          if (signal.aborted) throw err;
          return null;
        });
        if (made) return made;
      }
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
      warm?.close();
      await pool?.close();
      pool = null;
    },
  };
}
