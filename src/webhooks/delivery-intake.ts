import type { Logger } from "../log.ts";
import type { DeliveryAdmission } from "./delivery-admission.ts";
import type { Claim, DeliveryRow, DeliveryStore } from "./delivery-store.ts";
import type { EndpointCache } from "./endpoint-cache.ts";

export interface DeliveryIntakeOptions {
  deliveries: Pick<DeliveryStore, "fanOut" | "claimDue" | "nextDueAfter">;
  endpoints: EndpointCache;
  admission: DeliveryAdmission;
  /** This process's claim: what is built or loaded is born held by it. */
  claim: () => Claim;
  /** Takes a delivery this process has just claimed into memory (or releases it: no room, stopped, endpoint gone). */
  admit: (row: DeliveryRow) => void;
  stopped: () => boolean;
  log: Logger;
  /** Outbox rows fanned out per transaction. */
  fanOutBatch: number;
  /** How often the outbox and the due deliveries are looked at without a wake-up. */
  pollMs: number;
}

/**
 * The two ways deliveries come into the dispatcher's memory: fan-out of the
 * outbox (woken after each commit, and polled), and loads of due deliveries
 * nobody holds (after a restart, a backlog, a parked retry, or another
 * process's crash), as often as the admission policy asks.
 */
export function createDeliveryIntake(opts: DeliveryIntakeOptions) {
  const { deliveries, endpoints, admission, claim, admit, log, fanOutBatch } = opts;
  let fanning: Promise<void> | null = null;
  let fanAgain = false;
  let loading: Promise<void> | null = null;
  let ticker: ReturnType<typeof setInterval> | undefined;

  async function fanOutLoop(): Promise<void> {
    do {
      fanAgain = false;
      const { deliveries: built, endpoints: active, events } = await deliveries.fanOut(fanOutBatch, claim());
      endpoints.add(active);
      for (const row of built) admit(row);
      if (events === fanOutBatch) fanAgain = true;
    } while (fanAgain && !opts.stopped());
  }

  /** Fans out what the outbox holds; a call while a run is under way makes that run go round again. */
  function wake(): void {
    if (opts.stopped()) return;
    if (fanning) {
      fanAgain = true;
      return;
    }
    fanning = fanOutLoop()
      .catch((err) => log.error("Cannot fan out outbox events to webhook endpoints", { err }))
      .finally(() => {
        fanning = null;
      });
  }

  async function loadDueOnce(): Promise<void> {
    const now = Date.now();
    const share = admission.claimShare();
    if (!share) return;
    // What this process holds is leased, so it is not found again; what another holds is not found at all.
    // An organization at its share is skipped: its backlog cannot crowd the others out of memory.
    const { rows, more } = await deliveries.claimDue(now, share.limit, claim(), { skipOrgs: share.skipOrgs, roomFor: share.roomFor });
    admission.claimed(more);
    if (rows.length > 0) {
      await endpoints.ensure(rows.map((r) => r.endpointId));
      for (const row of rows) admit(row); // when stopped (or the endpoint is gone) it is released at once
    }
    admission.swept(now, await deliveries.nextDueAfter(now));
  }

  /**
   * Loads (claims) pending deliveries that are due and held by nobody: after a
   * restart, a backlog, a parked retry, or another process's crash.
   */
  function loadDue(): Promise<void> {
    if (opts.stopped()) return Promise.resolve();
    if (!loading) {
      loading = loadDueOnce()
        .catch((err) => log.error("Cannot load due webhook deliveries", { err }))
        .finally(() => {
          loading = null;
        });
    }
    return loading;
  }

  function tick() {
    wake();
    if (admission.shouldLoad(Date.now())) void loadDue();
  }

  return {
    wake,
    loadDue,

    /** Polls every `pollMs` from now on. */
    startPolling(): void {
      ticker = setInterval(tick, opts.pollMs);
      ticker.unref?.();
    },

    stopPolling(): void {
      if (ticker) clearInterval(ticker);
    },

    /** Waits for the fan-out and the load under way, if any (none starts once stopped). */
    async settled(): Promise<void> {
      await fanning;
      await loading;
    },
  };
}
