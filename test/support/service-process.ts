import type { Subprocess } from "bun";
import { join } from "node:path";

/**
 * A real service in a child process (test/support/service-child.ts), for
 * tests with several service processes on one database (a shared file, or a
 * sqld) or a process that dies by `kill -9` or a crash point (VIDLIVE_FAULT).
 */
export interface Child {
  /** http://127.0.0.1:PORT */
  base: string;
  proc: Subprocess;
  port: number;
  rtmpPort: number;
  orgId: string;
  apiKey: string;
  /** The child's work-ledger holder id (who claimed a work row). */
  holder: string;
  api(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** Graceful stop (SIGTERM), then SIGKILL if it hangs. */
  stop(): Promise<void>;
  /** Its last stdout lines (its logs, at most LOG_LINES), for a failing test to print what the process did. */
  recentLogs(): string[];
}

/** Lines kept per child for `recentLogs`. */
const LOG_LINES = 200;

export async function spawnService(env: Record<string, string>, org?: { orgId: string; apiKey: string }): Promise<Child> {
  const args = [process.execPath, join(import.meta.dir, "service-child.ts"), JSON.stringify(env)];
  if (org) args.push(JSON.stringify(org));
  // In the child's environment too: crash points (VIDLIVE_FAULT) read process.env, not the config.
  // TEST_LOGS: the child always logs (to its stdout, kept below for `recentLogs`); this process prints them only with its own TEST_LOGS.
  const proc = Bun.spawn(args, { stdout: "pipe", stderr: "inherit", env: { ...process.env, TEST_LOGS: "1", ...env } });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let out = "";
  let info: { port: number; rtmpPort: number; orgId: string; apiKey: string; holder: string } | undefined;
  while (!info) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`service child exited before it was ready: ${out}`);
    out += decoder.decode(value, { stream: true });
    const line = out.split("\n").find((l) => l.startsWith("{") && l.includes('"rtmpPort"'));
    if (line) info = JSON.parse(line);
  }
  // Keep draining so the child never blocks on a full pipe; the last lines are kept (and printed with TEST_LOGS, by pid).
  const recent: string[] = [];
  let partial = "";
  const keep = (text: string) => {
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      if (line === "") continue;
      recent.push(line);
      if (process.env.TEST_LOGS) process.stderr.write(`[${proc.pid}] ${line}\n`);
    }
    if (recent.length > LOG_LINES) recent.splice(0, recent.length - LOG_LINES);
  };
  if (process.env.TEST_LOGS) process.stderr.write(`[${proc.pid}] service child, DATA_DIR ${env.DATA_DIR}\n`);
  keep(out);
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      if (value) keep(decoder.decode(value, { stream: true }));
    }
  })();
  const { port, rtmpPort, orgId, apiKey, holder } = info;
  return {
    proc,
    base: `http://127.0.0.1:${port}`,
    port,
    rtmpPort,
    orgId,
    apiKey,
    holder,
    recentLogs: () => (partial ? [...recent, partial] : [...recent]),
    api: (path, init = {}) =>
      fetch(`http://127.0.0.1:${port}/api/public/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      }),
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await proc.exited;
      clearTimeout(timer);
    },
  };
}
