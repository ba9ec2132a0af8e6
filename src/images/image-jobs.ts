/**
 * Image cuts run here: at most `total` ffmpeg runs at once in this process,
 * at most `perOrg` of them for one organization, and a free slot goes to the
 * waiting organization running the fewest (round robin among equals), so one
 * organization asking for a thousand GIFs delays another's thumbnail by at
 * most one cut. An organization with `maxQueuedPerOrg` cuts already waiting
 * is refused (`ImageQueueFull`, 429) instead of growing the queue.
 *
 * Single flight: a second request for an image that is being cut waits for
 * the same promise (keyed by the image's object key), in this process.
 */
export class ImageQueueFull extends Error {
  override name = "ImageQueueFull";
}

export interface ImageJobs {
  run<T>(orgId: string, key: string, fn: () => Promise<T>): Promise<T>;
  /** Cuts running and waiting now (tests, metrics). */
  stats(): { running: number; waiting: number };
}

export function createImageJobs(opts: { total: number; perOrg: number; maxQueuedPerOrg: number }): ImageJobs {
  const inFlight = new Map<string, Promise<unknown>>();
  const waiting = new Map<string, Array<() => void>>();
  const runningOf = new Map<string, number>();
  let running = 0;

  /** Starts waiting cuts while slots are free: each to the waiting organization running the fewest (ties: the longest unserved). */
  function pump() {
    while (running < opts.total) {
      let pick: string | null = null;
      for (const orgId of waiting.keys()) {
        const n = runningOf.get(orgId) ?? 0;
        if (n < opts.perOrg && (pick === null || n < (runningOf.get(pick) ?? 0))) pick = orgId;
      }
      if (pick === null) return;
      const queue = waiting.get(pick)!;
      const start = queue.shift()!;
      // Round robin among equals: the organization served goes to the back of the order.
      waiting.delete(pick);
      if (queue.length > 0) waiting.set(pick, queue);
      running++;
      runningOf.set(pick, (runningOf.get(pick) ?? 0) + 1);
      start();
    }
  }

  function slot(orgId: string): Promise<void> {
    const queue = waiting.get(orgId) ?? [];
    if (queue.length >= opts.maxQueuedPerOrg) return Promise.reject(new ImageQueueFull(`more than ${opts.maxQueuedPerOrg} images of this organization are waiting to be made`));
    return new Promise((resolve) => {
      queue.push(resolve);
      waiting.set(orgId, queue);
      pump();
    });
  }

  function release(orgId: string) {
    running--;
    const n = (runningOf.get(orgId) ?? 1) - 1;
    if (n <= 0) runningOf.delete(orgId);
    else runningOf.set(orgId, n);
    pump();
  }

  return {
    run<T>(orgId: string, key: string, fn: () => Promise<T>): Promise<T> {
      const same = inFlight.get(key);
      if (same) return same as Promise<T>;
      const job = (async () => {
        await slot(orgId);
        try {
          return await fn();
        } finally {
          release(orgId);
        }
      })().finally(() => inFlight.delete(key));
      inFlight.set(key, job);
      return job;
    },
    stats: () => ({ running, waiting: [...waiting.values()].reduce((n, q) => n + q.length, 0) }),
  };
}
