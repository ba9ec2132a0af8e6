import { cancelled } from "./errors.ts";
import { forEachLine } from "../transcoder/for-each-line.ts";

export interface ToolOutcome {
  exitCode: number;
  stdout: string;
  stderrTail: string[];
}

/**
 * Runs a CLI to completion, collecting stdout and the last stderr lines;
 * aborting kills it (SIGKILL) and rejects with a CANCELLED SttError.
 * `onStderrLine` sees each stderr line (progress parsing).
 */
export async function runTool(argv: string[], opts: { signal?: AbortSignal; onStderrLine?: (line: string) => void } = {}): Promise<ToolOutcome> {
  const { signal } = opts;
  if (signal?.aborted) throw cancelled(signal);
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const kill = () => proc.kill("SIGKILL");
  signal?.addEventListener("abort", kill, { once: true });
  try {
    const tail: string[] = [];
    const [stdout] = await Promise.all([
      new Response(proc.stdout).text(),
      forEachLine(proc.stderr, (line) => {
        tail.push(line);
        if (tail.length > 30) tail.shift();
        opts.onStderrLine?.(line);
      }),
    ]);
    const exitCode = await proc.exited;
    if (signal?.aborted) throw cancelled(signal);
    return { exitCode, stdout, stderrTail: tail };
  } finally {
    signal?.removeEventListener("abort", kill);
    if (proc.exitCode === null && proc.signalCode === null) kill();
  }
}
