import type { Database } from "../db/create-database.ts";
import { analyticsWhepSamples } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";

export const WHEP_SAMPLE_MS = 10_000;

/**
 * Every 10 s, this process's WHEP viewers per stream go into
 * `analytics_whep_samples` under its holder id (one row per stream, instant
 * and process): concurrent viewers add every process's rows of an instant.
 */
export function createWhepSampler(deps: { database: Database; logger: Logger; holder: string; counts: () => Array<[string, number]>; now?: () => number }) {
  const now = deps.now ?? Date.now;
  let timer: ReturnType<typeof setInterval> | null = null;
  async function sample(): Promise<void> {
    const counts = deps.counts();
    if (counts.length === 0) return;
    const at = Math.floor(now() / WHEP_SAMPLE_MS) * WHEP_SAMPLE_MS;
    const rows = counts.map(([streamId, viewers]) => ({ streamId, at, holder: deps.holder, viewers }));
    await deps.database.write((tx) =>
      tx
        .insert(analyticsWhepSamples)
        .values(rows)
        .onConflictDoUpdate({ target: [analyticsWhepSamples.streamId, analyticsWhepSamples.at, analyticsWhepSamples.holder], set: { viewers: rows[0]!.viewers } }),
    );
  }
  return {
    sample,
    start(): void {
      timer ??= setInterval(() => void sample().catch((err) => deps.logger.warn("Cannot sample WHEP viewers", { err })), WHEP_SAMPLE_MS);
    },
    stop(): void {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
