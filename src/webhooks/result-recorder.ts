import type { Logger } from "../log.ts";
import type { AttemptResult, Claim, DeliveryStore } from "./delivery-store.ts";

export interface ResultRecorderOptions<E extends { result: AttemptResult }> {
  deliveries: Pick<DeliveryStore, "record">;
  /** This process's claim: a held retry keeps it, a release gives back only what it holds. */
  claim: () => Claim;
  log: Logger;
  /** The pause before each transaction that lets results share it (DispatcherOptions.recordLingerMs says why). */
  lingerMs: number;
  /** Once stopped, nothing is scheduled on its own: the stopping side drains what is left. */
  stopped: () => boolean;
  /** Called for each entry once its result is durable, never before. */
  settle: (entry: E) => void;
}

/**
 * Group-commits attempt results: all that arrived while the previous
 * transaction ran go into the next one, together with the leases to give
 * back. A failed transaction keeps its batch for the next try.
 */
export function createResultRecorder<E extends { result: AttemptResult }>(opts: ResultRecorderOptions<E>) {
  const { deliveries, log } = opts;
  let results: E[] = [];
  /** Leases to give back (deliveries forgotten unattempted or parked), recorded with the next results. */
  let releases: string[] = [];
  let flushing: Promise<void> | null = null;

  const unflushed = () => results.length > 0 || releases.length > 0;

  async function flushOnce(): Promise<void> {
    const batch = results;
    const freed = releases;
    results = [];
    releases = [];
    if (batch.length === 0 && freed.length === 0) return;
    try {
      await deliveries.record(
        batch.map((b) => b.result),
        opts.claim(),
        freed,
      );
    } catch (err) {
      log.error("Cannot record webhook attempts", { err, count: batch.length, delivery_ids: batch.slice(0, 20).map((b) => b.result.deliveryId) });
      results = batch.concat(results);
      releases = freed.concat(releases);
      if (!opts.stopped()) await Bun.sleep(1000);
      return;
    }
    for (const b of batch) opts.settle(b);
  }

  function scheduleFlush() {
    if (flushing) return;
    flushing = Bun.sleep(opts.lingerMs)
      .then(flushOnce)
      .catch((err) => log.error("Cannot settle webhook attempts", { err }))
      .finally(() => {
        flushing = null;
        if (unflushed() && !opts.stopped()) scheduleFlush();
      });
  }

  return {
    /** Results not yet durable. */
    get pending() {
      return results.length;
    },

    /** Even when stopped: a result that came in during the stop grace is flushed as soon as it can be. */
    record(entry: E): void {
      results.push(entry);
      scheduleFlush();
    },

    release(deliveryId: string): void {
      releases.push(deliveryId);
      if (!opts.stopped()) scheduleFlush();
    },

    /** Waits out the flush under way and tries what is left, a few times at most. */
    async drain(): Promise<void> {
      for (let i = 0; i < 3 && (flushing || unflushed()); i++) {
        await flushing;
        if (unflushed()) await flushOnce();
      }
    },

    /** One last try at what is left, not waiting on anything. */
    async flush(): Promise<void> {
      if (unflushed()) await flushOnce();
    },
  };
}
