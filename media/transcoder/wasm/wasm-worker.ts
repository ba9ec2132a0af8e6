/**
 * Worker entry: owns one single-thread ffmpeg.wasm core and runs one command
 * at a time. `core.exec` is synchronous, so while it runs this thread answers
 * nothing; the pool enforces timeouts by terminating the worker from outside.
 */
import * as fs from "node:fs";
import { createRequire } from "node:module";
import type { FromWorker, ToWorker } from "./worker-protocol.ts";
import { createNodeFsMount, mountHostDir, type EmscriptenFs } from "./node-fs-mount.ts";

declare const self: Worker;

interface FfmpegCore {
  FS: EmscriptenFs & { unmount(p: string): void };
  DEFAULT_ARGS: string[];
  DEFAULT_ARGS_FFPROBE: string[];
  exec(...args: string[]): number;
  ffprobe(...args: string[]): number;
  reset(): void;
  setLogger(fn: (m: { type: string; message: string }) => void): void;
  /** Current view of the wasm heap; its length is how much memory the core holds. */
  HEAP8?: Int8Array;
}

const post = (m: FromWorker) => self.postMessage(m);
const pending: ToWorker[] = [];
let core: FfmpegCore | null = null;
let nodeFs: unknown = null;
let currentId = -1;

// Attached before any await: messages that arrive while the core loads would
// otherwise be dropped and the job would hang.
self.onmessage = (ev: MessageEvent<ToWorker>) => {
  pending.push(ev.data);
  if (core) drain();
};

function drain(): void {
  while (pending.length > 0) run(pending.shift()!);
}

function run(msg: ToWorker): void {
  const c = core!;
  currentId = msg.id;
  const mounted: string[] = [];
  try {
    for (const m of msg.mounts) {
      mountHostDir(c.FS, nodeFs, m.host, m.at);
      mounted.push(m.at);
    }
    const exitCode = msg.tool === "ffmpeg" ? c.exec(...msg.args) : c.ffprobe(...msg.args);
    post({ type: "done", id: msg.id, exitCode, heapBytes: c.HEAP8?.buffer.byteLength ?? 0 });
  } catch (e) {
    post({ type: "failed", id: msg.id, message: e instanceof Error ? e.message : String(e) });
  } finally {
    for (const at of mounted) {
      try {
        c.FS.unmount(at);
      } catch {
        // a failed unmount only leaks a mount point name
      }
    }
    c.reset();
    currentId = -1;
  }
}

async function load(): Promise<void> {
  const started = performance.now();
  // The core is built for a browser worker and derives its base URL from
  // self.location; Bun workers have none.
  const coreUrl = import.meta.resolve("@ffmpeg/core");
  (globalThis as { location?: unknown }).location = new URL(coreUrl);
  const require = createRequire(import.meta.url);
  const wasmPath = require.resolve("@ffmpeg/core/wasm");
  // The package ships no types; the shape used here is FfmpegCore above.
  const specifier: string = "@ffmpeg/core";
  const { default: createFFmpegCore } = (await import(specifier)) as {
    default: (m: Record<string, unknown>) => Promise<FfmpegCore>;
  };
  const c = await createFFmpegCore({ wasmBinary: fs.readFileSync(wasmPath) });
  // Both backends pass identical argument lists, so drop the core's implicit
  // "-nostdin -y"; the argument builder adds them itself.
  c.DEFAULT_ARGS = ["ffmpeg"];
  c.DEFAULT_ARGS_FFPROBE = ["ffprobe"];
  c.setLogger(({ type, message }) => {
    if (currentId < 0) return;
    const stream = type === "stdout" ? "stdout" : "stderr";
    // The core only flushes on \n, so \r-terminated lines (ffmpeg's repeat
    // counters, stats) arrive glued together; split them like native output.
    for (const line of message.split("\r")) {
      if (line !== "") post({ type: "line", id: currentId, stream, line });
    }
  });
  nodeFs = createNodeFsMount(c.FS);
  core = c;
  post({ type: "ready", loadMs: Math.round(performance.now() - started) });
  drain();
}

load().catch((e) => post({ type: "load-failed", message: e instanceof Error ? e.message : String(e) }));
