import * as os from "node:os";
import { abortReason } from "./abort-reason.ts";
import type { RunLayout } from "./build-ffmpeg-args.ts";
import { withParentDeathSignal, type ChildRegistry } from "./child-processes.ts";
import { createTail, type FfmpegRunner, type RunOutcome, type RunRequest } from "./ffmpeg-runner.ts";
import { forEachLine } from "./for-each-line.ts";

export interface NativeRunnerOptions {
  ffmpeg?: string;
  ffprobe?: string;
  /** Spawn through `setpriv --pdeathsig KILL` when available, so children die with this process (default true). */
  parentDeathSignal?: boolean;
  /** Records each child's pid while it runs, for the start-up reap (see child-processes.ts). */
  children?: ChildRegistry;
  /** Default `one-run`; `per-rendition` runs one process per rung (benches and tests compare the two). */
  runLayout?: RunLayout;
  /** For the `chunked` layout (tests): how many runs it plans for at once; default the cores. */
  parallelism?: number;
}

/** Runs the system's ffmpeg/ffprobe; abort or timeout kills the process, and so does this process's death. */
export function createNativeRunner(opts: NativeRunnerOptions = {}): FfmpegRunner {
  return {
    backend: "native",
    // One process decodes the source once for every rung: x264 threads already use every core (README, "Native: one run").
    runLayout: opts.runLayout ?? "one-run",
    parallelism: opts.parallelism ?? os.availableParallelism(),
    toolPaths: (files) => files,
    run: (req) => runNative(req.tool === "ffmpeg" ? (opts.ffmpeg ?? "ffmpeg") : (opts.ffprobe ?? "ffprobe"), req, opts),
  };
}

async function runNative(bin: string, req: RunRequest, opts: NativeRunnerOptions): Promise<RunOutcome> {
  if (req.signal.aborted) throw abortReason(req.signal);
  const argv = [bin, ...req.args];
  const proc = Bun.spawn(withParentDeathSignal(argv, opts.parentDeathSignal !== false), { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  opts.children?.add(proc.pid, argv);
  const kill = () => proc.kill("SIGKILL");
  req.signal.addEventListener("abort", kill, { once: true });
  try {
    const tail = createTail();
    const stdoutChunks: string[] = [];
    await Promise.all([
      forEachLine(proc.stdout, (line) => {
        stdoutChunks.push(line);
        req.onLine?.(line, "stdout");
      }),
      forEachLine(proc.stderr, (line) => {
        tail.push(line);
        req.onLine?.(line, "stderr");
      }),
    ]);
    const exitCode = await proc.exited;
    if (req.signal.aborted) throw abortReason(req.signal);
    return { exitCode, stdout: stdoutChunks.join("\n"), stderrTail: tail.lines };
  } finally {
    req.signal.removeEventListener("abort", kill);
    if (proc.exitCode === null && proc.signalCode === null) kill(); // abandoned (its output failed): never left running
    if (opts.children) {
      // The record goes only once the process is gone (an abort kills it but it may still be exiting).
      await proc.exited.catch(() => undefined);
      opts.children.remove(proc.pid);
    }
  }
}
