import * as path from 'node:path';
import type { FfmpegRunner } from '../ffmpeg-runner.ts';
import type { WasmLease } from './wasm-worker-pool.ts';
import type { HostMount } from './worker-protocol.ts';

/** Mount points inside the core: the input's directory and the job's outDir. */
export const WASM_IN = '/in';
export const WASM_OUT = '/out';

/**
 * Runs commands on a leased worker. The input's directory is mounted at /in
 * and outDir at /out through the node:fs-backed FS, so nothing is copied.
 */
export function createWasmRunner(lease: WasmLease): FfmpegRunner {
  return {
    backend: 'wasm',
    toolPaths: (files) => ({ input: path.posix.join(WASM_IN, path.basename(files.input)), outDir: WASM_OUT }),
    run(req) {
      const mounts: HostMount[] = [];
      if (req.files.input) mounts.push({ host: path.dirname(req.files.input), at: WASM_IN });
      if (req.files.outDir) mounts.push({ host: req.files.outDir, at: WASM_OUT });
      return lease.run({ tool: req.tool, args: req.args, mounts, onLine: req.onLine, signal: req.signal });
    },
  };
}
