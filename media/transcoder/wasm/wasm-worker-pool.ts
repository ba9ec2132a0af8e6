/**
 * A fixed number of slots, each backed by one Bun Worker running one
 * ffmpeg.wasm core. A job leases a slot for its whole duration (probe, HLS,
 * downloads); extra jobs wait in FIFO. While it runs, a job may also
 * `borrow` idle slots for its independent runs (one HLS run per rendition):
 * a borrow is served only when no job is waiting, and a borrowed slot goes
 * back after each run, so borrowing never delays a queued job by more than
 * the run in progress.
 *
 * `core.exec` blocks its worker thread, so the only way to stop a run is
 * `worker.terminate()`; the slot then gets a fresh worker, loaded at once so
 * the next job does not pay the core's load time.
 */
import { abortReason } from "../abort-reason.ts";
import { createTail, type RunOutcome, type Tool } from "../ffmpeg-runner.ts";
import { TranscodeError } from "../transcode-error.ts";
import type { TranscoderLogger } from "../types.ts";
import type { FromWorker, HostMount, ToWorker } from "./worker-protocol.ts";

/**
 * A core's wasm heap never shrinks; past this size the worker is replaced
 * after its job so one huge video does not pin that memory forever.
 */
const RECYCLE_HEAP_BYTES = 768 * 1024 * 1024;

export interface WasmRunRequest {
  tool: Tool;
  args: string[];
  mounts: HostMount[];
  onLine?: (line: string, stream: "stdout" | "stderr") => void;
  signal: AbortSignal;
}

export interface WasmLease {
  run(req: WasmRunRequest): Promise<RunOutcome>;
  release(): void;
}

export interface WasmWorkerPool {
  readonly size: number;
  /** A slot for a whole job, in FIFO order. */
  acquire(signal?: AbortSignal): Promise<WasmLease>;
  /** An extra slot for a job that already holds one; only granted when no `acquire` is waiting. */
  borrow(signal?: AbortSignal): Promise<WasmLease>;
  /** Workers alive right now (loaded or loading). */
  liveWorkers(): number;
  close(): Promise<void>;
}

interface Running {
  id: number;
  onLine?: WasmRunRequest["onLine"];
  stdout: string[];
  tail: ReturnType<typeof createTail>;
  resolve(out: RunOutcome & { heapBytes: number }): void;
  reject(e: unknown): void;
}

interface LiveWorker {
  worker: Worker;
  ready: Promise<void>;
  /** Settles `ready` as failed; used when the worker dies before loading. */
  failReady(e: unknown): void;
  running: Running | null;
  dead: boolean;
}

interface Slot {
  index: number;
  live: LiveWorker | null;
  leased: boolean;
}

interface Waiter {
  resolve(slot: Slot): void;
  reject(e: unknown): void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

const WORKER_URL = new URL("./wasm-worker.ts", import.meta.url).href;

export function createWasmWorkerPool(opts: { size: number; logger?: TranscoderLogger }): WasmWorkerPool {
  const size = Math.max(1, Math.floor(opts.size));
  const log = opts.logger ?? (() => {});
  const slots: Slot[] = Array.from({ length: size }, (_, index) => ({ index, live: null, leased: false }));
  const waiters: Waiter[] = [];
  /** Borrow requests: served after every waiting job, FIFO among themselves. */
  const borrowers: Waiter[] = [];
  let nextRunId = 1;
  let closed = false;

  function spawn(slot: Slot): LiveWorker {
    // Referenced while loading or running; an idle worker must not keep the
    // process alive (see the 'ready' handler and run()).
    const worker = new Worker(WORKER_URL);
    let markReady!: () => void;
    let markFailed!: (e: unknown) => void;
    const live: LiveWorker = {
      worker,
      ready: new Promise<void>((res, rej) => {
        markReady = res;
        markFailed = rej;
      }),
      failReady: (e) => markFailed(e),
      running: null,
      dead: false,
    };
    // Nobody may be awaiting `ready` yet; keep an early failure from being unhandled.
    live.ready.catch(() => {});
    worker.onmessage = (ev: MessageEvent<FromWorker>) => {
      const m = ev.data;
      if (m.type === "ready") {
        log({ event: "wasm.worker_loaded", slot: slot.index, loadMs: m.loadMs });
        if (!live.running) worker.unref();
        markReady();
        return;
      }
      if (m.type === "load-failed") {
        kill(slot, live, `core failed to load: ${m.message}`, false);
        markFailed(new TranscodeError("FFMPEG_FAILED", `ffmpeg.wasm core failed to load: ${m.message}`));
        return;
      }
      const run = live.running;
      if (!run || run.id !== m.id) return;
      if (m.type === "line") {
        if (m.stream === "stdout") run.stdout.push(m.line);
        else run.tail.push(m.line);
        run.onLine?.(m.line, m.stream);
      } else if (m.type === "done") {
        live.running = null;
        run.resolve({ exitCode: m.exitCode, stdout: run.stdout.join("\n"), stderrTail: run.tail.lines, heapBytes: m.heapBytes });
      } else if (m.type === "failed") {
        live.running = null;
        // The core threw something other than its normal exit: do not trust it again.
        kill(slot, live, `core crashed: ${m.message}`, false);
        run.reject(new TranscodeError("FFMPEG_FAILED", `ffmpeg.wasm crashed: ${m.message}`, run.tail.lines));
      }
    };
    worker.onerror = (ev) => {
      const message = (ev as ErrorEvent).message || "worker error";
      const run = live.running;
      live.running = null;
      kill(slot, live, message, false);
      markFailed(new TranscodeError("FFMPEG_FAILED", `wasm worker failed: ${message}`));
      run?.reject(new TranscodeError("FFMPEG_FAILED", `wasm worker failed: ${message}`, run.tail.lines));
    };
    return live;
  }

  /**
   * Terminates a worker. `respawn` starts the replacement loading at once
   * (after an abort, where the slot is healthy); crashes respawn lazily on
   * next use, so a core that cannot load does not spin.
   */
  function kill(slot: Slot, live: LiveWorker, reason: string, respawn = true): void {
    if (live.dead) return;
    live.dead = true;
    live.worker.terminate();
    // Anyone still waiting for this worker to load must not wait forever.
    live.failReady(new TranscodeError(closed ? "CANCELLED" : "FFMPEG_FAILED", `wasm worker stopped: ${reason}`));
    if (slot.live === live) slot.live = null;
    log({ event: "wasm.worker_terminated", slot: slot.index, reason });
    if (respawn && !closed) slot.live = spawn(slot);
  }

  function liveWorker(slot: Slot): LiveWorker {
    if (!slot.live || slot.live.dead) slot.live = spawn(slot);
    return slot.live;
  }

  function grant(slot: Slot): void {
    const waiter = waiters.shift() ?? borrowers.shift();
    if (!waiter) {
      slot.leased = false;
      return;
    }
    if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
    slot.leased = true;
    waiter.resolve(slot);
  }

  function lease(slot: Slot): WasmLease {
    let released = false;
    return {
      async run(req) {
        if (released) throw new Error("lease already released");
        if (closed) throw new TranscodeError("CANCELLED", "transcoder was closed");
        if (req.signal.aborted) throw abortReason(req.signal);
        const live = liveWorker(slot);
        const onAbort = () => {
          const run = live.running;
          live.running = null;
          kill(slot, live, `aborted: ${abortReason(req.signal).code}`);
          run?.reject(abortReason(req.signal));
        };
        req.signal.addEventListener("abort", onAbort, { once: true });
        try {
          await abortable(live.ready, req.signal);
          const runStarted = performance.now();
          const out = await new Promise<RunOutcome & { heapBytes: number }>((resolve, reject) => {
            const id = nextRunId++;
            live.running = { id, onLine: req.onLine, stdout: [], tail: createTail(), resolve, reject };
            const msg: ToWorker = { type: "run", id, tool: req.tool, args: req.args, mounts: req.mounts };
            live.worker.ref();
            live.worker.postMessage(msg);
          }).finally(() => live.worker.unref());
          log({
            event: "wasm.run_finished",
            slot: slot.index,
            tool: req.tool,
            exitCode: out.exitCode,
            ms: Math.round(performance.now() - runStarted),
            heapBytes: out.heapBytes,
          });
          if (out.heapBytes > RECYCLE_HEAP_BYTES) kill(slot, live, `heap grew to ${out.heapBytes} bytes`, false);
          // ffmpeg's error exits are rarely exercised in the wasm build; start clean.
          else if (req.tool === "ffmpeg" && out.exitCode !== 0) kill(slot, live, `ffmpeg exited ${out.exitCode}`, false);
          return { exitCode: out.exitCode, stdout: out.stdout, stderrTail: out.stderrTail };
        } finally {
          req.signal.removeEventListener("abort", onAbort);
        }
      },
      release() {
        if (released) return;
        released = true;
        if (closed) return;
        grant(slot);
      },
    };
  }

  function enqueue(queue: Waiter[], signal: AbortSignal | undefined): Promise<WasmLease> {
    if (closed) return Promise.reject(new TranscodeError("CANCELLED", "transcoder was closed"));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    // A free slot means nobody is waiting (release hands slots straight on).
    const free = slots.find((s) => !s.leased);
    if (free) {
      free.leased = true;
      liveWorker(free);
      return Promise.resolve(lease(free));
    }
    return new Promise<WasmLease>((resolve, reject) => {
      const waiter: Waiter = { resolve: (slot) => resolve(lease(slot)), reject, signal };
      if (signal) {
        waiter.onAbort = () => {
          const i = queue.indexOf(waiter);
          if (i >= 0) queue.splice(i, 1);
          reject(abortReason(signal));
        };
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      queue.push(waiter);
    });
  }

  return {
    size,
    acquire: (signal) => enqueue(waiters, signal),
    borrow: (signal) => enqueue(borrowers, signal),
    liveWorkers: () => slots.filter((s) => s.live && !s.live.dead).length,
    async close() {
      if (closed) return;
      closed = true;
      const err = new TranscodeError("CANCELLED", "transcoder was closed");
      for (const w of [...waiters.splice(0), ...borrowers.splice(0)]) {
        if (w.onAbort) w.signal?.removeEventListener("abort", w.onAbort);
        w.reject(err);
      }
      for (const slot of slots) {
        const live = slot.live;
        if (!live) continue;
        const run = live.running;
        live.running = null;
        kill(slot, live, "pool closed", false);
        run?.reject(err);
      }
    },
  };
}

/** Waits for `p` unless the signal fires first. */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
