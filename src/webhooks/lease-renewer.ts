import type { Logger } from "../log.ts";
import type { Claim, DeliveryStore } from "./delivery-store.ts";

export interface LeaseRenewerOptions<T> {
  deliveries: Pick<DeliveryStore, "renew">;
  /** How long a claim lasts: it is renewed every third of it. */
  leaseMs: number;
  claim: () => Claim;
  log: Logger;
  /** What this process holds a lease on right now. */
  held: () => T[];
  idOf: (item: T) => string;
  /** Those of `held` whose lease was not extended; answers how many it dropped from memory. */
  lost: (items: T[]) => number;
}

/**
 * Keeps the leases of everything held in memory alive. Renewing thrice per
 * lease lets a process miss a renewal or two (a stalled event loop) before
 * another process may take its work over.
 */
export function createLeaseRenewer<T>(opts: LeaseRenewerOptions<T>) {
  const renewMs = Math.max(10, Math.floor(opts.leaseMs / 3));
  let running = false;
  let renewing: Promise<void> | null = null;
  let timer: ReturnType<typeof setInterval> | undefined;

  /**
   * A delivery found no longer ours (our lease ran out while the process
   * stalled and another claimed it, or it is no longer pending) is handed to
   * `lost`, which drops it unless it is under way.
   */
  function renew(): void {
    if (!running || renewing) return;
    const held = opts.held();
    if (held.length === 0) return;
    renewing = opts.deliveries
      .renew(held.map(opts.idOf), opts.claim())
      .then((kept) => {
        const lost = opts.lost(held.filter((item) => !kept.has(opts.idOf(item))));
        if (lost > 0) opts.log.warn("Webhook deliveries held in memory were taken over or finished elsewhere; dropped here", { count: lost });
      })
      .catch((err) => opts.log.error("Cannot renew webhook delivery leases", { err, count: held.length }))
      .finally(() => {
        renewing = null;
      });
  }

  return {
    start(): void {
      running = true;
      timer = setInterval(renew, renewMs);
      timer.unref?.();
    },

    /** No renewal starts after this; one under way finishes, see `settled`. */
    stop(): void {
      running = false;
      if (timer) clearInterval(timer);
    },

    /** Resolves once the renewal under way, if any, is over. */
    async settled(): Promise<void> {
      await renewing;
    },
  };
}
