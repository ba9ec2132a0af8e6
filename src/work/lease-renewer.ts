import type { Logger } from "../log.ts";

export interface LeaseRenewerOptions<T> {
  /** Extends the leases on `ids`; answers those still held. */
  renew: (ids: string[]) => Promise<Set<string>>;
  /** How long a claim lasts: it is renewed every third of it. */
  leaseMs: number;
  log: Logger;
  /** What is renewed, for the logs ("webhook deliveries", "work", "broadcasts"). */
  what: string;
  /** What this process holds a lease on right now. */
  held: () => T[];
  idOf: (item: T) => string;
  /** Those of `held` whose lease was not extended; answers how many it dropped from memory. */
  lost: (items: T[]) => number;
}

/**
 * Keeps the leases of everything a process holds in memory alive, in one
 * batched write per period whatever the number held. Renewing thrice per
 * lease lets a process miss a renewal or two (a stalled event loop) before
 * another process may take its work over.
 */
export function createLeaseRenewer<T>(opts: LeaseRenewerOptions<T>) {
  const renewMs = Math.max(10, Math.floor(opts.leaseMs / 3));
  let running = false;
  let renewing: Promise<void> | null = null;
  let timer: ReturnType<typeof setInterval> | undefined;

  /**
   * Something found no longer ours (our lease ran out while the process
   * stalled and another claimed it, or it was finished or cancelled
   * elsewhere) is handed to `lost`.
   */
  function renew(): void {
    if (!running || renewing) return;
    const held = opts.held();
    if (held.length === 0) return;
    renewing = opts
      .renew(held.map(opts.idOf))
      .then((kept) => {
        const lost = opts.lost(held.filter((item) => !kept.has(opts.idOf(item))));
        if (lost > 0) opts.log.warn(`Leases on ${opts.what} were taken over or finished elsewhere; dropped here`, { count: lost });
      })
      .catch((err) => opts.log.error(`Cannot renew leases on ${opts.what}`, { err, count: held.length }))
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
