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
}

export async function spawnService(env: Record<string, string>, org?: { orgId: string; apiKey: string }): Promise<Child> {
  const args = [process.execPath, join(import.meta.dir, "service-child.ts"), JSON.stringify(env)];
  if (org) args.push(JSON.stringify(org));
  // In the child's environment too: crash points (VIDLIVE_FAULT) read process.env, not the config.
  const proc = Bun.spawn(args, { stdout: "pipe", stderr: "inherit", env: { ...process.env, ...env } });
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
  // Keep draining (logs, with TEST_LOGS) so the child never blocks on a full pipe.
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      if (process.env.TEST_LOGS && value) process.stderr.write(value);
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
