import * as fs from "node:fs";
import { join } from "node:path";

/**
 * Native ffmpeg/ffprobe children must not outlive the service: a `kill -9`
 * of the service used to leave them running (re-parented to PID 1), writing
 * into directories the restarted job was rebuilding. Two layers:
 *
 * 1. `setpriv --pdeathsig KILL` (util-linux) wraps every spawn when it is on
 *    PATH: the kernel kills the child the moment its parent dies, however it
 *    dies. setpriv execs the tool, so the pid and the kill on abort are the
 *    tool's own.
 * 2. Every child is recorded in a pid file (`<dir>/<pid>.json`: the parent's
 *    pid and start time, the child's argv) removed when it exits. At start-up
 *    `reapOrphans` kills the recorded children whose parent is gone and whose
 *    command line is still the recorded one (a recycled pid is left alone);
 *    this is the fallback where setpriv is missing.
 */

let setprivPath: string | null | undefined;

/** `setpriv` when it is on PATH (Debian: util-linux), else null. */
export function findSetpriv(): string | null {
  if (setprivPath === undefined) setprivPath = process.platform === "linux" ? Bun.which("setpriv") : null;
  return setprivPath;
}

/** The argv that runs `argv` so it dies with this process, when the platform can. */
export function withParentDeathSignal(argv: string[], enabled = true): string[] {
  const setpriv = enabled ? findSetpriv() : null;
  return setpriv ? [setpriv, "--pdeathsig", "KILL", "--", ...argv] : argv;
}

/** Start time of a process in clock ticks since boot (/proc/<pid>/stat field 22), or null. */
function startTicks(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

function cmdline(pid: number): string[] | null {
  try {
    return fs
      .readFileSync(`/proc/${pid}/cmdline`, "utf8")
      .split("\0")
      .filter((s) => s !== "");
  } catch {
    return null;
  }
}

interface ChildRecord {
  parent: number;
  parentStart: string | null;
  argv: string[];
}

export interface ChildRegistry {
  /** `argv`: the tool's own command line (without a setpriv wrapper). */
  add(pid: number, argv: string[]): void;
  remove(pid: number): void;
}

/** Records spawned children under `dir` (created 0700). */
export function createChildRegistry(dir: string): ChildRegistry {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const self = { parent: process.pid, parentStart: startTicks(process.pid) };
  return {
    add(pid, argv) {
      try {
        fs.writeFileSync(join(dir, `${pid}.json`), JSON.stringify({ ...self, argv } satisfies ChildRecord), { mode: 0o600 });
      } catch {
        // Best effort: pdeathsig still covers the child.
      }
    },
    remove(pid) {
      fs.rmSync(join(dir, `${pid}.json`), { force: true });
    },
  };
}

/** True when the recorded parent is still the same running process (and not this one). */
function parentAlive(rec: ChildRecord): boolean {
  if (rec.parent === process.pid) return false; // an earlier life of this pid: we have spawned nothing yet
  const start = startTicks(rec.parent);
  if (start === null) return false;
  return rec.parentStart === null || start === rec.parentStart;
}

/**
 * Kills children recorded in `dir` by a process that is gone, when their
 * command line still matches the record; removes stale records. Run before
 * this process spawns anything. Returns the pids killed.
 */
export function reapOrphans(dir: string, log: (msg: string, fields: Record<string, unknown>) => void = () => {}): number[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const killed: number[] = [];
  for (const name of names) {
    const m = /^(\d+)\.json$/.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    const file = join(dir, name);
    let rec: ChildRecord;
    try {
      rec = JSON.parse(fs.readFileSync(file, "utf8")) as ChildRecord;
    } catch {
      fs.rmSync(file, { force: true });
      continue;
    }
    if (parentAlive(rec)) continue; // another live process sharing DATA_DIR owns it
    const args = cmdline(pid);
    // The record holds the tool's argv; a process still in setpriv shows it as its tail.
    const tail = rec.argv;
    if (args && args.length >= tail.length && args.slice(args.length - tail.length).join("\0") === tail.join("\0")) {
      try {
        process.kill(pid, "SIGKILL");
        killed.push(pid);
        log("Killed an orphaned media process", { pid, tool: tail[0] });
      } catch {
        // Already gone.
      }
    }
    fs.rmSync(file, { force: true });
  }
  return killed;
}
