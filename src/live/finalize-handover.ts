import { and, eq, gt, inArray } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import { work } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";
import { chunks } from "../work/lease.ts";
import type { WorkQueue } from "../work/work-ledger.ts";
import type { LiveWork } from "./live-work.ts";

/** How often the owner looks for a finalization of its broadcasts queued elsewhere. */
export const HANDOVER_POLL_MS = 250;
/** A stream's row is not made due again before this (bounds how often a failing run of ours is hurried). */
const HANDED_MS = 2_000;

/**
 * The owner's side of a finalization queued by another process (POST /end/
 * answered there, or its reconnect timer fired there). That process cannot
 * close our files: it defers the `live-finalize` row until our lease would
 * lapse (its fallback if we died), and does not race us for it. Here, every
 * HANDOVER_POLL_MS while this process holds broadcasts, one read finds such
 * rows (queued, due later); they are made due now and the runner woken, so
 * this process claims them at once (measured: src/live/README.md).
 *
 * The read goes to table `work` directly (read-only; the ledger stays its
 * only writer): the ledger has no batched "open rows of these entities".
 */
export function createFinalizeHandover(deps: { database: Database; ledger: WorkQueue<LiveWork>; held: () => string[]; wake: () => void; logger: Logger; pollMs?: number }) {
  const pollMs = deps.pollMs ?? HANDOVER_POLL_MS;
  const handed = new Map<string, number>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let busy = false;

  async function tick(): Promise<void> {
    if (busy) return;
    busy = true;
    try {
      const now = Date.now();
      for (const [id, at] of handed) if (at + HANDED_MS < now) handed.delete(id);
      const held = deps.held().filter((id) => !handed.has(id));
      const due: string[] = [];
      for (const ids of chunks(held)) {
        const rows = await deps.database.db
          .select({ id: work.entityId })
          .from(work)
          .where(and(eq(work.type, "live-finalize"), eq(work.status, "queued"), gt(work.runAfter, now), inArray(work.entityId, ids)));
        due.push(...rows.map((r) => r.id));
      }
      if (due.length === 0) return;
      await deps.database.write(async (tx) => {
        for (const id of due) await deps.ledger.reschedule(tx, `live-finalize:${id}`, Date.now());
      });
      for (const id of due) handed.set(id, now);
      deps.wake();
    } catch (err) {
      deps.logger.warn("Cannot look for finalizations queued elsewhere", { err });
    } finally {
      busy = false;
    }
  }

  return {
    tick,
    start() {
      timer ??= setInterval(() => void tick(), pollMs);
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
