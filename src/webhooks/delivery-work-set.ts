import type { AttemptOutcome } from "./deliver.ts";
import type { DeliveryAdmission } from "./delivery-admission.ts";
import type { DeliveryRow } from "./delivery-store.ts";

export type JobState = "queued" | "inflight" | "recording" | "waiting" | "gone";

/** A delivery held in memory: an automatic one (on the retry schedule, leased) or a manual re-send. */
export interface Job {
  row: DeliveryRow;
  manual: boolean;
  state: JobState;
  /** Its endpoint was deleted, or a manual re-send already delivered it: finish, record, then forget. */
  dead: boolean;
  /** This process holds the delivery's lease (automatic jobs): forgetting it releases the lease. */
  claimed: boolean;
  timer?: ReturnType<typeof setTimeout>;
  abort?: AbortController;
  waiters: Array<(outcome: AttemptOutcome | null) => void>;
}

export interface WorkSetOptions {
  /** Whether there is room for an automatic delivery, and whether a retry waits on a timer or in the database. */
  admission: DeliveryAdmission;
  /** Gives back a delivery's lease (group-committed with the next results). */
  release: (deliveryId: string) => void;
  /** Puts a job that is due in its endpoint's lane (or forgets it: stopped, endpoint gone). */
  enqueue: (job: Job) => void;
}

/**
 * The deliveries a process holds in memory, within the bounds the admission
 * policy sets: taken in when claimed, held on a timer while a near retry
 * waits, and forgotten (place and lease given back) when finished, parked,
 * dropped or lost. Automatic deliveries and manual re-sends of the same
 * delivery are held apart: a re-send ignores leases and the schedule.
 */
export function createWorkSet(opts: WorkSetOptions) {
  const { admission, release, enqueue } = opts;
  const auto = new Map<string, Job>();
  const manual = new Map<string, Job>();

  function settleWaiters(job: Job, outcome: AttemptOutcome | null) {
    const waiters = job.waiters;
    job.waiters = [];
    for (const w of waiters) w(outcome);
  }

  function mapOf(job: Job) {
    return job.manual ? manual : auto;
  }

  /** Takes a job out of memory for good (its row in the database stays as it is, its lease is given back). */
  function forget(job: Job) {
    if (job.timer) clearTimeout(job.timer);
    job.timer = undefined;
    job.state = "gone";
    if (mapOf(job).get(job.row.id) === job) {
      mapOf(job).delete(job.row.id);
      if (!job.manual) admission.unhold(job.row.orgId);
    }
    if (job.claimed) {
      job.claimed = false;
      release(job.row.id);
    }
    settleWaiters(job, null);
  }

  /** Arms a timer for a retry that is near, or leaves a far one to the database. */
  function waitOrPark(job: Job, at: number) {
    const delay = at - Date.now();
    if (delay <= 0) return enqueue(job);
    if (admission.parks(delay)) {
      forget(job);
      admission.parked(at);
      return;
    }
    job.state = "waiting";
    job.timer = setTimeout(() => {
      job.timer = undefined;
      if (job.state === "waiting") enqueue(job);
    }, delay);
  }

  return {
    settleWaiters,
    forget,
    waitOrPark,

    /** Held in memory, automatic and manual. */
    get size(): number {
      return auto.size + manual.size;
    },

    all(): Job[] {
      return [...auto.values(), ...manual.values()];
    },

    /** The jobs whose lease this process holds (to renew). */
    claimed(): Job[] {
      return [...auto.values()].filter((j) => j.claimed);
    },

    /** The automatic job of a delivery, if held. */
    automatic(deliveryId: string): Job | undefined {
      return auto.get(deliveryId);
    },

    /** Takes a delivery this process has just claimed into memory. */
    admit(row: DeliveryRow, waiter?: (o: AttemptOutcome | null) => void): void {
      const existing = auto.get(row.id);
      if (existing) {
        if (waiter) existing.waiters.push(waiter);
        return;
      }
      if (!admission.hold(row.orgId)) {
        // Left in the database, released: loaded when there is room (for this organization).
        release(row.id);
        waiter?.(null);
        return;
      }
      const job: Job = { row: { ...row }, manual: false, state: "queued", dead: false, claimed: true, waiters: waiter ? [waiter] : [] };
      auto.set(row.id, job);
      waitOrPark(job, row.nextAttemptAt ?? 0);
    },

    /** A manual re-send of `row`, to be queued; null if one is already under way (`waiter` then waits on it). */
    resend(row: DeliveryRow, waiter: (o: AttemptOutcome | null) => void): Job | null {
      const existing = manual.get(row.id);
      if (existing) {
        existing.waiters.push(waiter);
        return null;
      }
      // A manual re-send ignores leases: one attempt now, whoever holds the delivery.
      const job: Job = { row: { ...row }, manual: true, state: "queued", dead: false, claimed: false, waiters: [waiter] };
      manual.set(row.id, job);
      return job;
    },

    /** Drops what another process took over or finished, unless it is under way here. */
    dropLost(jobs: Job[]): number {
      let lost = 0;
      for (const job of jobs) {
        if (!job.claimed || (job.state !== "queued" && job.state !== "waiting")) continue;
        job.claimed = false;
        forget(job);
        lost++;
      }
      return lost;
    },
  };
}

export type WorkSet = ReturnType<typeof createWorkSet>;
