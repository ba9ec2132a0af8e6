import * as path from "node:path";
import { abortReason } from "../abort-reason.ts";
import type { RunLayout } from "../build-ffmpeg-args.ts";
import type { FfmpegRunner, RunOutcome, RunRequest } from "../ffmpeg-runner.ts";
import type { WasmLease, WasmRunRequest, WasmWorkerPool } from "./wasm-worker-pool.ts";
import type { HostMount } from "./worker-protocol.ts";

/** Mount points inside the core: the input's directory and the job's outDir. */
export const WASM_IN = "/in";
export const WASM_OUT = "/out";

const toolPaths: FfmpegRunner["toolPaths"] = (files) => ({
  input: path.posix.join(WASM_IN, path.basename(files.input)),
  outDir: WASM_OUT,
});

/**
 * The input's directory is mounted at /in and outDir at /out through the
 * node:fs-backed FS, so nothing is copied.
 */
function toWasmRequest(req: RunRequest): WasmRunRequest {
  const mounts: HostMount[] = [];
  if (req.files.input) mounts.push({ host: path.dirname(req.files.input), at: WASM_IN });
  if (req.files.outDir) mounts.push({ host: req.files.outDir, at: WASM_OUT });
  return { tool: req.tool, args: req.args, mounts, onLine: req.onLine, signal: req.signal };
}

/** Runs commands one after the other on a leased worker (probes). */
export function createWasmRunner(lease: WasmLease): FfmpegRunner {
  return { backend: "wasm", toolPaths, run: (req) => lease.run(toWasmRequest(req)) };
}

interface Task {
  req: RunRequest;
  resolve(out: RunOutcome): void;
  reject(e: unknown): void;
  onAbort(): void;
}

/**
 * The runner of one job. The job's own lease (`home`) runs one command at a
 * time; commands started while it is busy (a stage's runs are started
 * together) wait in the job's queue and also ask the pool to `borrow` idle
 * workers, each of which runs one queued command and goes back. So a job
 * uses every idle worker but never holds one a waiting job could have, and it
 * can always finish on its own lease. `dispose()` withdraws pending borrows.
 */
export function createWasmJobRunner(pool: WasmWorkerPool, home: WasmLease, runLayout: RunLayout = "chunked"): FfmpegRunner & { dispose(): void } {
  const queue: Task[] = [];
  let homeBusy = false;
  /** Borrow requests not yet answered by the pool. */
  let borrowing = 0;
  const disposed = new AbortController();

  const take = (): Task | undefined => {
    const task = queue.shift();
    task?.req.signal.removeEventListener("abort", task.onAbort);
    return task;
  };
  const execute = (lease: WasmLease, task: Task) => lease.run(toWasmRequest(task.req)).then(task.resolve, task.reject);

  function pump(): void {
    if (!homeBusy) {
      const task = take();
      if (task) {
        homeBusy = true;
        void execute(home, task).finally(() => {
          homeBusy = false;
          pump();
        });
      }
    }
    while (borrowing < queue.length && !disposed.signal.aborted) {
      borrowing++;
      pool.borrow(disposed.signal).then(
        (lease) => {
          borrowing--;
          const task = take();
          if (!task) return lease.release();
          void execute(lease, task).finally(() => {
            lease.release();
            pump();
          });
        },
        () => {
          borrowing--;
        },
      );
    }
  }

  return {
    backend: "wasm",
    // Segment-aligned chunks over every worker, joined by stream copies (chunked-runs.ts; README, "The wasm backend").
    runLayout,
    parallelism: pool.size,
    toolPaths,
    run(req) {
      if (req.signal.aborted) return Promise.reject(abortReason(req.signal));
      return new Promise<RunOutcome>((resolve, reject) => {
        const task: Task = {
          req,
          resolve,
          reject,
          // Still queued when the job stops: leave without a worker.
          onAbort: () => {
            const i = queue.indexOf(task);
            if (i >= 0) queue.splice(i, 1);
            reject(abortReason(req.signal));
          },
        };
        req.signal.addEventListener("abort", task.onAbort, { once: true });
        queue.push(task);
        pump();
      });
    },
    dispose() {
      disposed.abort();
      for (const task of queue.splice(0)) {
        task.req.signal.removeEventListener("abort", task.onAbort);
        task.reject(abortReason(task.req.signal));
      }
    },
  };
}
