/** What one organization has in flight, across all its endpoints. */
export interface OrgShare {
  inflight: number;
}

/** One endpoint's FIFO of work, and what it has in flight. */
export interface Lane<T> {
  queue: T[];
  head: number;
  inflight: number;
  /** Failed attempts in a row: a failing receiver gets fewer slots, so many dead ones cannot fill the global limit. */
  failures: number;
  /** The endpoint's organization. */
  org: OrgShare;
}

const FAILING_AFTER = 3;

export interface DeliveryLanesOptions<T> {
  /**
   * Requests in flight, all endpoints together. Past it, an organization with
   * nothing in flight may still start one, up to `ceiling`.
   */
  maxInFlight: number;
  /**
   * Requests in flight that are never exceeded. Bun's fetch runs at most 256
   * requests per process and queues the rest behind them (measured: with 300
   * hung requests, the 301st to a healthy host waited for a timeout), so this
   * stays below 256 with room for source fetches and the live player.
   */
  ceiling?: number;
  /** Requests in flight to one endpoint: a slow or dead receiver holds only these. */
  maxPerEndpoint: number;
  /** In flight to an endpoint whose last attempts all failed, until one succeeds. */
  maxPerFailingEndpoint: number;
  /** Requests in flight for one organization, all its endpoints together: its receivers never hold more. */
  maxPerOrg?: number;
  /** False for an item dropped while it waited in its lane: it is skipped, not started. */
  isQueued(item: T): boolean;
  /**
   * Starts an attempt. It calls `begin(lane)` once it really sends, and
   * `end(lane, …)` when the attempt is over, so a start that gives up holds no slot.
   */
  start(item: T, lane: Lane<T>): void;
}

/**
 * One lane per endpoint, served round-robin under four limits: per endpoint
 * (fewer while it fails), per organization, overall, and a ceiling. So one
 * slow receiver never holds up the others, and one organization's receivers,
 * however many hang, never hold more than its share: the other organizations'
 * deliveries start at once.
 */
export function createDeliveryLanes<T>(opts: DeliveryLanesOptions<T>) {
  const { maxInFlight, maxPerEndpoint, maxPerFailingEndpoint, isQueued, start } = opts;
  const ceiling = Math.max(maxInFlight, opts.ceiling ?? maxInFlight);
  const maxPerOrg = opts.maxPerOrg ?? Infinity;
  const lanes = new Map<string, Lane<T>>();
  const orgs = new Map<string, OrgShare>();
  const ready = new Set<Lane<T>>();
  let inflight = 0;

  function laneOf(endpointId: string, orgId: string): Lane<T> {
    let lane = lanes.get(endpointId);
    if (!lane) {
      let org = orgs.get(orgId);
      if (!org) orgs.set(orgId, (org = { inflight: 0 }));
      lanes.set(endpointId, (lane = { queue: [], head: 0, inflight: 0, failures: 0, org }));
    }
    return lane;
  }

  /** Whether the limits let this lane start one more request now. */
  function mayStart(lane: Lane<T>): boolean {
    if (lane.inflight >= (lane.failures >= FAILING_AFTER ? maxPerFailingEndpoint : maxPerEndpoint)) return false;
    if (lane.org.inflight >= maxPerOrg) return false;
    if (inflight < maxInFlight) return true;
    // Past the overall limit only an organization with nothing in flight may start one (up to
    // the ceiling): however many organizations' receivers hang, every organization keeps moving.
    return lane.org.inflight === 0 && inflight < ceiling;
  }

  return {
    get inflight() {
      return inflight;
    },

    /** In flight for one organization. */
    inflightOf(orgId: string): number {
      return orgs.get(orgId)?.inflight ?? 0;
    },

    /** Queues an item behind its endpoint's others, or ahead of them with `front`; `pump` starts it. */
    push(endpointId: string, orgId: string, item: T, front = false): void {
      const lane = laneOf(endpointId, orgId);
      if (front) lane.queue.splice(lane.head, 0, item);
      else lane.queue.push(item);
      ready.add(lane);
    },

    /** Starts whatever the limits allow, taking the endpoints in turn. */
    pump(): void {
      let started = true;
      while (started && ready.size > 0 && inflight < ceiling) {
        started = false;
        for (const lane of ready) {
          if (!mayStart(lane)) continue;
          const item = lane.queue[lane.head]!;
          lane.queue[lane.head++] = undefined as never;
          if (lane.head >= lane.queue.length) {
            lane.queue = [];
            lane.head = 0;
            ready.delete(lane);
          } else if (lane.head > 1024 && lane.head * 2 > lane.queue.length) {
            lane.queue = lane.queue.slice(lane.head);
            lane.head = 0;
          }
          if (!isQueued(item)) {
            started = true; // forgotten while it waited in the lane: look at the lane again
            continue;
          }
          start(item, lane);
          started = true;
          if (ready.has(lane)) {
            // To the back of the round: a slot that frees goes to the next endpoint in turn.
            ready.delete(lane);
            ready.add(lane);
          }
        }
      }
    },

    begin(lane: Lane<T>): void {
      inflight++;
      lane.inflight++;
      lane.org.inflight++;
    },

    /** `ok` null: the attempt was cut, not made, so it says nothing about the receiver. */
    end(lane: Lane<T>, ok: boolean | null): void {
      inflight--;
      lane.inflight--;
      lane.org.inflight--;
      if (ok !== null) lane.failures = ok ? 0 : lane.failures + 1;
    },

    clear(): void {
      lanes.clear();
      orgs.clear();
      ready.clear();
    },
  };
}
