import { hasNativeFfmpeg, resolveBackend } from "../../media/transcoder/index.ts";
import { sql } from "drizzle-orm";
import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import type { Logger } from "../log.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { TimeoutError, withTimeout } from "./with-timeout.ts";

/** Each check's own limit: a probe must answer within the orchestrator's timeout even when a dependency hangs. */
export const CHECK_TIMEOUT_MS = 2000;
/** A key that never exists: stat answers null when the store is reachable, throws when not. */
const PROBE_KEY = "ops/readyz-probe";

export interface CheckResult {
  ok: boolean;
  /** Non-secret detail (the backend, the port); for a failure, what failed, without internals. */
  detail?: string;
}

export type Checks = Record<"database" | "storage" | "transcoder" | "ingest", () => Promise<CheckResult>>;

export function readinessChecks(deps: { config: Config; database: Database; objects: ObjectStore; rtmpPort: () => number | null }): Checks {
  return {
    async database() {
      // The write path, not a read: a database that answers reads but takes no writes (a stalled
      // write lock) must read as not ready. An empty write transaction takes the write lock
      // (BEGIN IMMEDIATE) through this process's write queue, and changes nothing.
      await deps.database.write((tx) => tx.run(sql`SELECT 1`));
      return { ok: true };
    },
    async storage() {
      await deps.objects.stat(PROBE_KEY);
      return { ok: true, detail: deps.objects.kind };
    },
    async transcoder() {
      // MEDIA_BACKEND: the transcoder itself is made on first use (the wasm pool costs memory), so this checks what it needs.
      const backend = resolveBackend(deps.config.mediaBackend);
      if (backend === "native" && !hasNativeFfmpeg()) return { ok: false, detail: "MEDIA_BACKEND=native needs ffmpeg and ffprobe on PATH" };
      return { ok: true, detail: backend };
    },
    async ingest() {
      const port = deps.rtmpPort();
      return port === null ? { ok: false, detail: "RTMP ingest is not listening" } : { ok: true, detail: `port ${port}` };
    },
  };
}

/**
 * Runs every check at once, each bounded by CHECK_TIMEOUT_MS. A failure's
 * cause is logged at warn and answered only as "timed out" / "failed": the
 * endpoint is unauthenticated, so no error text (paths, hosts) leaves.
 */
export async function checkReadiness(checks: Checks, logger: Logger): Promise<{ ready: boolean; failed: string[]; checks: Record<string, CheckResult> }> {
  const names = Object.keys(checks) as Array<keyof Checks>;
  const results = await Promise.all(
    names.map(async (name): Promise<CheckResult> => {
      try {
        return await withTimeout(checks[name](), CHECK_TIMEOUT_MS, name);
      } catch (err) {
        logger.warn("Readiness check failed", { check: name, err });
        return { ok: false, detail: err instanceof TimeoutError ? `timed out after ${CHECK_TIMEOUT_MS} ms` : "failed" };
      }
    }),
  );
  const out: Record<string, CheckResult> = {};
  for (const [i, n] of names.entries()) out[n] = results[i]!;
  const failed = names.filter((_, i) => !results[i]!.ok);
  return { ready: failed.length === 0, failed, checks: out };
}
