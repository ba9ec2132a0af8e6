/**
 * ffmpeg processes started before they are needed (issue 27, first
 * thumbnail): Debian's ffmpeg links ~215 shared libraries and spends ~0.13 s
 * loading them before it reads a byte, a third of a first thumbnail. A warm
 * process has done that and waits on its stdin for its input (reading from a
 * pipe is all an argument list fixed in advance allows: ts-frame-packets.ts
 * moves the wanted frame to a fixed time). Taking one starts its successor
 * for the same arguments, so the next request finds one warm too; one per
 * argument list, at most `maxKinds` lists, each ended after `idleMs` unused.
 */
import type { Subprocess } from "bun";

export interface WarmRun {
  /** The process's stdout (the image) once it exits 0; rejects with its last stderr lines otherwise. */
  output: Promise<Uint8Array>;
}

interface Idle {
  proc: Subprocess<"pipe", "pipe", "pipe">;
  timer: ReturnType<typeof setTimeout>;
}

export interface WarmFfmpeg {
  /** Runs `args` (whose input is `pipe:0`) on `input`, on a process started earlier when there is one. */
  run(args: string[], input: Uint8Array, signal: AbortSignal): WarmRun;
  close(): void;
}

export function createWarmFfmpeg(opts: { argv0?: string[]; maxKinds?: number; idleMs?: number } = {}): WarmFfmpeg {
  const argv0 = opts.argv0 ?? ["ffmpeg"];
  const maxKinds = opts.maxKinds ?? 4;
  const idleMs = opts.idleMs ?? 5 * 60_000;
  const idle = new Map<string, Idle>();
  let closed = false;

  const spawn = (args: string[]) => Bun.spawn([...argv0, ...args], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });

  function end(key: string): void {
    const w = idle.get(key);
    if (!w) return;
    idle.delete(key);
    clearTimeout(w.timer);
    w.proc.kill("SIGKILL");
  }

  function prewarm(key: string, args: string[]): void {
    if (closed || idle.has(key)) return;
    // The least recently used kind makes room (a Map iterates in insertion order; a taken kind is re-inserted).
    if (idle.size >= maxKinds) end(idle.keys().next().value!);
    const proc = spawn(args);
    const timer = setTimeout(() => end(key), idleMs);
    timer.unref?.();
    idle.set(key, { proc, timer });
    // A process that dies while waiting (killed from outside) is not handed out.
    proc.exited.then(() => {
      if (idle.get(key)?.proc === proc) {
        clearTimeout(timer);
        idle.delete(key);
      }
    });
  }

  function take(key: string, args: string[]): Subprocess<"pipe", "pipe", "pipe"> {
    const w = idle.get(key);
    idle.delete(key);
    if (w) clearTimeout(w.timer);
    const proc = w && w.proc.exitCode === null && w.proc.signalCode === null ? w.proc : spawn(args);
    prewarm(key, args);
    return proc;
  }

  return {
    run(args, input, signal) {
      const proc = take(args.join("\0"), args);
      const kill = () => proc.kill("SIGKILL");
      signal.addEventListener("abort", kill, { once: true });
      const output = (async () => {
        try {
          proc.stdin.write(input);
          await proc.stdin.end();
          const [out, err, code] = await Promise.all([new Response(proc.stdout).arrayBuffer(), new Response(proc.stderr).text(), proc.exited]);
          if (signal.aborted) throw signal.reason;
          if (code !== 0 || out.byteLength === 0) throw new Error(`ffmpeg could not cut the image (exit ${code}): ${err.trim().split("\n").slice(-3).join(" | ")}`);
          return new Uint8Array(out);
        } finally {
          signal.removeEventListener("abort", kill);
          if (proc.exitCode === null && proc.signalCode === null) kill();
        }
      })();
      return { output };
    },
    close() {
      closed = true;
      for (const key of [...idle.keys()]) end(key);
    },
  };
}
