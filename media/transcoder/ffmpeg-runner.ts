import type { RunLayout } from "./build-ffmpeg-args.ts";
import type { Backend } from "./types.ts";

export type Tool = "ffmpeg" | "ffprobe";

export interface RunRequest {
  tool: Tool;
  args: string[];
  /** Host paths the command touches; the wasm backend mounts them. */
  files: { input?: string; outDir?: string };
  onLine?: (line: string, stream: "stdout" | "stderr") => void;
  /** Aborting kills the run; the rejection is `signal.reason` when it is a TranscodeError. */
  signal: AbortSignal;
}

export interface RunOutcome {
  exitCode: number;
  stdout: string;
  /** Last stderr lines, for error messages. */
  stderrTail: string[];
}

/**
 * The only thing that differs between backends: how a command is run and
 * how host paths appear to it.
 */
export interface FfmpegRunner {
  readonly backend: Backend;
  /** Paths as the tool sees them, for the argument builders. */
  toolPaths(files: { input: string; outDir: string }): { input: string; outDir: string };
  run(req: RunRequest): Promise<RunOutcome>;
  /** How a job's renditions are grouped into encode runs (build-ffmpeg-args.ts); default `per-rendition`. */
  readonly runLayout?: RunLayout;
  /** How many commands it runs at once (the wasm pool's size); the chunked layout cuts about twice as many chunks. */
  readonly parallelism?: number;
}

/** Keeps the last `max` lines; ffmpeg can log a lot on broken input. */
export function createTail(max = 40) {
  const lines: string[] = [];
  return {
    push(line: string) {
      lines.push(line);
      if (lines.length > max) lines.shift();
    },
    lines,
  };
}
