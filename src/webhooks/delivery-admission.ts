export interface DeliveryAdmissionOptions {
  /** Automatic deliveries held in memory (queued, in flight or waiting on a timer); the rest wait in the database. */
  maxHeld: number;
  /** Of those, how many one organization's deliveries may be (at least 1). */
  maxHeldPerOrg: number;
  /** A retry further away than this is left in the database instead of holding a timer. */
  parkAfterMs: number;
  /** The due deliveries are looked at at least this often, whatever else happens. */
  sweepMs: number;
}

/** What one load of due deliveries may claim (delivery-store.ts `claimDue`'s limit and share). */
export interface ClaimShare {
  limit: number;
  /** Organizations at their share of memory: not looked at. */
  skipOrgs: string[];
  /** How many more of one organization's deliveries fit in its share, read when the load claims. */
  roomFor: (orgId: string) => number;
}

/**
 * The in-memory load policy of the dispatcher: how many automatic deliveries a
 * process holds, overall and per organization, and when it looks at the
 * database again for those it left there. The in-flight limits are the lanes'
 * (delivery-lanes.ts); this bounds what waits behind them.
 *
 * - A quarter of memory per organization (by default): a backlog of one
 *   organization's failing deliveries never keeps another's out of memory.
 * - An organization at its share is skipped by loads until it has a tenth of
 *   its share free again, so its backlog comes back in batches, not one by one.
 * - A retry further away than `parkAfterMs` is parked: left to the database
 *   (its lease released), loaded again when it falls due.
 */
export function createDeliveryAdmission(opts: DeliveryAdmissionOptions) {
  const { maxHeld, parkAfterMs, sweepMs } = opts;
  const maxHeldPerOrg = Math.max(1, opts.maxHeldPerOrg);
  /** Automatic deliveries held in memory, per organization. */
  const heldByOrg = new Map<string, number>();
  /** Organizations at their share of memory: their due deliveries are left in the database until they are below it. */
  const fullOrgs = new Set<string>();
  let held = 0;
  /** Due deliveries were left in the database for want of room: look again at the next tick. */
  let backlog = true;
  /** When the first parked retry falls due, as far as this process knows. */
  let parkedDue: number | null = null;
  let lastSweep = 0;

  return {
    /** Held in memory, all organizations together. */
    get held(): number {
      return held;
    },

    heldOf(orgId: string): number {
      return heldByOrg.get(orgId) ?? 0;
    },

    /**
     * Takes a place in memory for one of `orgId`'s deliveries. False: there is
     * no room (for this organization); the delivery is left in the database and
     * loaded when there is.
     */
    hold(orgId: string): boolean {
      const n = heldByOrg.get(orgId) ?? 0;
      if (held >= maxHeld || n >= maxHeldPerOrg) {
        if (n >= maxHeldPerOrg) fullOrgs.add(orgId);
        else backlog = true;
        return false;
      }
      held++;
      heldByOrg.set(orgId, n + 1);
      if (n + 1 >= maxHeldPerOrg) fullOrgs.add(orgId);
      return true;
    },

    /** Gives back the place of a delivery that left memory. */
    unhold(orgId: string): void {
      const was = heldByOrg.get(orgId);
      if (was === undefined) return;
      held--;
      const n = was - 1;
      if (n > 0) heldByOrg.set(orgId, n);
      else heldByOrg.delete(orgId);
      // Room again (a tenth of its share, so its backlog is loaded in batches): load what it left in the database.
      if (n <= maxHeldPerOrg - Math.ceil(maxHeldPerOrg / 10) && fullOrgs.delete(orgId)) backlog = true;
    },

    /** Whether a retry due in `delayMs` is parked (left to the database) rather than held on a timer. */
    parks(delayMs: number): boolean {
      return delayMs > parkAfterMs;
    },

    /** A delivery was parked until `at`: the database is looked at again then. */
    parked(at: number): void {
      parkedDue = parkedDue === null ? at : Math.min(parkedDue, at);
    },

    /** Whether to look for due deliveries now: a backlog, a parked retry fallen due, or the periodic sweep. */
    shouldLoad(now: number): boolean {
      return backlog || (parkedDue !== null && parkedDue <= now) || now - lastSweep >= sweepMs;
    },

    /** What a load may claim now; null when memory is full (it counts as a backlog: looked at again at the next tick). */
    claimShare(): ClaimShare | null {
      const room = maxHeld - held;
      if (room <= 0) {
        backlog = true;
        return null;
      }
      return { limit: room, skipOrgs: [...fullOrgs], roomFor: (orgId) => maxHeldPerOrg - (heldByOrg.get(orgId) ?? 0) };
    },

    /** A load claimed what it found; `more`: it filled its limit, there may be more. */
    claimed(more: boolean): void {
      backlog = more;
    },

    /** A load is over: `nextDue` is when the next pending delivery falls due (null: none). */
    swept(now: number, nextDue: number | null): void {
      parkedDue = nextDue;
      lastSweep = now;
    },
  };
}

export type DeliveryAdmission = ReturnType<typeof createDeliveryAdmission>;
