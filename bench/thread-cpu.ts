/**
 * CPU time of this process, read from /proc (Linux): the main thread alone
 * (`/proc/self/task/<pid>/stat`, where the event loop runs: what caps a
 * server's requests per second) and every thread (`process.cpuUsage()`:
 * worker threads, GC and I/O threads too). Wall-clock figures are
 * meaningless on a loaded machine; CPU seconds per unit of work are not.
 */
import { readFileSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux

export interface CpuSample {
  mainMs: number;
  processMs: number;
}

function mainThreadMs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
  // Fields after the command's closing parenthesis: utime is the 14th field, stime the 15th.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) * TICK_MS;
}

export function cpuNow(): CpuSample {
  const u = process.cpuUsage();
  return { mainMs: mainThreadMs(), processMs: (u.user + u.system) / 1000 };
}

/** CPU milliseconds per `per` units of work between two samples. */
export function cpuPer(before: CpuSample, after: CpuSample, units: number, per = 1000): CpuSample {
  const k = units > 0 ? per / units : 0;
  return { mainMs: (after.mainMs - before.mainMs) * k, processMs: (after.processMs - before.processMs) * k };
}
