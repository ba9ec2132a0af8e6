/**
 * Crash points for the durability tests: with VIDLIVE_FAULT set to a point's
 * name, the process kills itself (SIGKILL, as `kill -9`) when it reaches that
 * point, so a test can prove the work resumes from exactly there. Unset in
 * production; reading one environment variable is all it costs.
 */
export function crashPoint(name: string): void {
  if (process.env.VIDLIVE_FAULT === name) process.kill(process.pid, "SIGKILL");
}
