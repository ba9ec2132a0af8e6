import type { EndpointStore, SendableEndpoint } from "./endpoint-store.ts";

/**
 * How long a cached endpoint is used before the database is asked again
 * whether it still exists. The deletion route tells its own process at once
 * (`remove`); another process on the same database stops starting attempts
 * to it about this long after the deletion at the latest (those deliveries
 * are already `dropped`: a recorded result changes nothing but the attempt
 * log).
 */
export const ENDPOINT_RECHECK_MS = 1000;

interface Entry {
  endpoint: SendableEndpoint;
  checkedAt: number;
}

/**
 * The endpoints the dispatcher sends to, secrets opened, as the store last
 * gave them. An endpoint deleted while this process runs never comes back,
 * even from a fan-out or a lookup that was under way when it was deleted.
 *
 * Several processes share the database: an endpoint in use is looked up
 * again `recheckMs` after it was last checked (one query for all those due,
 * on a timer, so no use waits for it), and one the store no longer gives
 * (deleted by another process) is removed. Endpoints nobody uses cost no
 * query and no timer. Endpoints are never edited in place, so deletion is
 * the only change to catch; a changed row would be picked up by the same look.
 */
export function createEndpointCache(endpoints: Pick<EndpointStore, "sendableByIds">, opts: { recheckMs?: number } = {}) {
  const recheckMs = opts.recheckMs ?? ENDPOINT_RECHECK_MS;
  const byId = new Map<string, Entry>();
  const removed = new Set<string>();
  /** Used since their last check: these are looked at once they are due. */
  const used = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | null = null;
  let checking: Promise<void> | null = null;

  function add(found: readonly SendableEndpoint[], at = Date.now()): void {
    for (const endpoint of found) if (!removed.has(endpoint.id)) byId.set(endpoint.id, { endpoint, checkedAt: at });
  }

  function remove(id: string): void {
    removed.add(id);
    byId.delete(id);
    used.delete(id);
  }

  async function recheck(ids: string[]): Promise<void> {
    const at = Date.now();
    let found: SendableEndpoint[];
    try {
      found = await endpoints.sendableByIds(ids);
    } catch {
      // The database did not answer: keep them as they are and look again after another period.
      for (const id of ids) {
        const entry = byId.get(id);
        if (entry) entry.checkedAt = at;
      }
      return;
    }
    const live = new Set(found.map((e) => e.id));
    for (const id of ids) if (!live.has(id) && byId.has(id)) remove(id);
    add(found, at);
  }

  /** Looks at the used endpoints that are due, then waits for the next one to be due. */
  function tick(): void {
    if (checking) return; // it reschedules when done
    const now = Date.now();
    const due: string[] = [];
    for (const id of used) {
      const entry = byId.get(id);
      if (!entry) used.delete(id);
      else if (now - entry.checkedAt >= recheckMs) {
        due.push(id);
        used.delete(id);
      }
    }
    if (due.length === 0) return schedule();
    checking = recheck(due).finally(() => {
      checking = null;
      schedule();
    });
  }

  function schedule(): void {
    if (timer || checking) return;
    let soonest = Number.POSITIVE_INFINITY;
    for (const id of used) soonest = Math.min(soonest, (byId.get(id)?.checkedAt ?? 0) + recheckMs);
    if (soonest === Number.POSITIVE_INFINITY) return;
    timer = setTimeout(
      () => {
        timer = null;
        tick();
      },
      Math.max(1, soonest - Date.now()),
    );
    // Never what keeps a process alive.
    (timer as { unref?: () => void }).unref?.();
  }

  function lookup(id: string): Entry | undefined {
    const entry = byId.get(id);
    if (entry) {
      used.add(id);
      schedule();
    }
    return entry;
  }

  return {
    get(id: string): SendableEndpoint | undefined {
      return lookup(id)?.endpoint;
    },

    has(id: string): boolean {
      return lookup(id) !== undefined;
    },

    isRemoved(id: string): boolean {
      return removed.has(id);
    },

    /** Endpoints the store has just given (a fan-out's active endpoints). */
    add(found: readonly SendableEndpoint[]): void {
      add(found);
    },

    /** Looks up those of `ids` not known yet. */
    async ensure(ids: string[]): Promise<void> {
      const missing = [...new Set(ids)].filter((id) => !byId.has(id) && !removed.has(id));
      add(await endpoints.sendableByIds(missing));
    },

    /** The endpoint was deleted: never sent to again by this process. */
    remove,
  };
}

export type EndpointCache = ReturnType<typeof createEndpointCache>;
