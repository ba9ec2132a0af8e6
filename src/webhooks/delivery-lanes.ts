/** One endpoint's FIFO of work, and what it has in flight. */
export interface Lane<T> {
  queue: T[];
  head: number;
  inflight: number;
  /** Failed attempts in a row: a failing receiver gets fewer slots, so many dead ones cannot fill the global limit. */
  failures: number;
}

const FAILING_AFTER = 3;

export interface DeliveryLanesOptions<T> {
  /** Requests in flight, all endpoints together; an endpoint with none in flight may still start one. */
  maxInFlight: number;
  /** Requests in flight to one endpoint: a slow or dead receiver holds only these. */
  maxPerEndpoint: number;
  /** In flight to an endpoint whose last attempts all failed, until one succeeds. */
  maxPerFailingEndpoint: number;
  /** False for an item dropped while it waited in its lane: it is skipped, not started. */
  isQueued(item: T): boolean;
  /**
   * Starts an attempt. It calls `begin(lane)` once it really sends, and
   * `end(lane, …)` when the attempt is over, so a start that gives up holds no slot.
   */
  start(item: T, lane: Lane<T>): void;
}

/**
 * One lane per endpoint, served round-robin under a global and a
 * per-endpoint concurrency limit, so one slow receiver never holds up the others.
 */
export function createDeliveryLanes<T>(opts: DeliveryLanesOptions<T>) {
  const { maxInFlight, maxPerEndpoint, maxPerFailingEndpoint, isQueued, start } = opts;
  const lanes = new Map<string, Lane<T>>();
  const ready = new Set<Lane<T>>();
  let inflight = 0;

  function laneOf(endpointId: string): Lane<T> {
    let lane = lanes.get(endpointId);
    if (!lane) lanes.set(endpointId, (lane = { queue: [], head: 0, inflight: 0, failures: 0 }));
    return lane;
  }

  return {
    get inflight() {
      return inflight;
    },

    /** Queues an item behind its endpoint's others, or ahead of them with `front`; `pump` starts it. */
    push(endpointId: string, item: T, front = false): void {
      const lane = laneOf(endpointId);
      if (front) lane.queue.splice(lane.head, 0, item);
      else lane.queue.push(item);
      ready.add(lane);
    },

    /** Starts whatever the limits allow, taking the endpoints in turn. */
    pump(): void {
      let started = true;
      while (started && ready.size > 0) {
        started = false;
        for (const lane of ready) {
          if (lane.inflight >= (lane.failures >= FAILING_AFTER ? maxPerFailingEndpoint : maxPerEndpoint)) continue;
          // Past the overall limit only an endpoint with nothing in flight may start one:
          // however many receivers hang, every endpoint keeps moving.
          if (inflight >= maxInFlight && lane.inflight > 0) continue;
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
    },

    /** `ok` null: the attempt was cut, not made, so it says nothing about the receiver. */
    end(lane: Lane<T>, ok: boolean | null): void {
      inflight--;
      lane.inflight--;
      if (ok !== null) lane.failures = ok ? 0 : lane.failures + 1;
    },

    clear(): void {
      lanes.clear();
      ready.clear();
    },
  };
}
