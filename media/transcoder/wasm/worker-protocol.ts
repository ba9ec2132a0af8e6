/** Messages between the pool (main thread) and a wasm worker. */

export interface HostMount {
  /** Absolute directory on the host. */
  host: string;
  /** Mount point inside the core, e.g. '/in'. */
  at: string;
}

export type ToWorker = {
  type: "run";
  id: number;
  tool: "ffmpeg" | "ffprobe";
  args: string[];
  mounts: HostMount[];
};

export type FromWorker =
  | { type: "ready"; loadMs: number }
  | { type: "load-failed"; message: string }
  | { type: "line"; id: number; stream: "stdout" | "stderr"; line: string }
  | { type: "done"; id: number; exitCode: number; heapBytes: number }
  | { type: "failed"; id: number; message: string };
