import { createJobSignal } from "./abort-reason.ts";
import type { RunLayout } from "./build-ffmpeg-args.ts";
import { DEFAULT_PROBE_TIMEOUT_MS } from "./create-native-transcoder.ts";
import { cutInput } from "./cut-input.ts";
import { logFailure } from "./log-failure.ts";
import { probeInput } from "./probe-input.ts";
import { runTranscodeJob } from "./run-transcode-job.ts";
import { createTranscoderId } from "./transcoder-id.ts";
import type { CreateTranscoderOptions, Transcoder } from "./types.ts";
import { createWasmJobRunner, createWasmRunner } from "./wasm/wasm-runner.ts";
import { createWasmWorkerPool, type WasmLease } from "./wasm/wasm-worker-pool.ts";

/**
 * ffmpeg.wasm in a pool of Bun Workers: needs nothing installed, costs ~4-5x
 * native CPU. A job holds one worker from start to end and borrows idle ones
 * for its chunk runs (`runLayout`: default `chunked`; benches compare
 * `per-rendition`). Timeouts count from when a worker picks the
 * job up.
 */
export function createWasmTranscoder(opts: Omit<CreateTranscoderOptions, "backend"> & { runLayout?: RunLayout } = {}): Transcoder {
  const logger = opts.logger ?? (() => {});
  const pool = createWasmWorkerPool({ size: opts.workers ?? navigator.hardwareConcurrency ?? 1, logger });
  const id = createTranscoderId("wasm");

  async function withLease<T>(signal: AbortSignal | undefined, fn: (lease: WasmLease) => Promise<T>): Promise<T> {
    const lease = await pool.acquire(signal);
    try {
      return await fn(lease);
    } finally {
      lease.release();
    }
  }

  return {
    backend: "wasm",
    id,
    probe(input, probeOpts = {}) {
      return withLease(probeOpts.signal, async (lease) => {
        const js = createJobSignal({ signal: probeOpts.signal, timeoutMs: probeOpts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS, what: "probe" });
        try {
          return await probeInput(createWasmRunner(lease), input, js.signal);
        } finally {
          js.dispose();
        }
      });
    },
    cut(job, cutOpts = {}) {
      return withLease(cutOpts.signal, async (lease) => {
        const js = createJobSignal({ signal: cutOpts.signal, timeoutMs: cutOpts.timeoutMs, what: "cut" });
        try {
          return await cutInput(createWasmRunner(lease), job, js.signal);
        } finally {
          js.dispose();
        }
      });
    },
    async transcode(job, transcodeOpts = {}) {
      try {
        return await withLease(transcodeOpts.signal, async (lease) => {
          const js = createJobSignal({ signal: transcodeOpts.signal, timeoutMs: transcodeOpts.timeoutMs });
          const runner = createWasmJobRunner(pool, lease, opts.runLayout);
          try {
            return await runTranscodeJob(job, {
              runner,
              signal: js.signal,
              onProgress: transcodeOpts.onProgress,
              onOutputs: transcodeOpts.onOutputs,
              logger,
              transcoderId: id,
              preset: opts.preset ?? "veryfast",
            });
          } finally {
            runner.dispose();
            js.dispose();
          }
        });
      } catch (e) {
        logFailure(logger, id, "wasm", job.input, e);
        throw e;
      }
    },
    close: () => pool.close(),
  };
}
