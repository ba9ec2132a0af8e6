import type { Logger } from "../log.ts";
import type { BeaconEvent } from "./beacon-input.ts";
import type { BeaconAsset } from "./asset-lookup.ts";
import type { BeaconStore, StoreWrite } from "./beacon-store.ts";
import { eventTuple, type EventTuple } from "./event-batch.ts";
import type { ViewerTraits } from "./viewer-traits.ts";

/** Events waiting in memory at most (those being written count too); past it new beacons are dropped (counted), so a flood cannot grow memory. */
export const MAX_PENDING = 50_000;
/** A flush starts this long after the first waiting event, or at once when this many wait. */
const FLUSH_DELAY_MS = 25;
const FLUSH_AT = 2_000;
/** After a failed write the same events are written again after this, doubling up to the maximum. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;
/** A stop keeps retrying a failing write this long, then logs what it could not store. */
const STOP_RETRY_MS = 10_000;

/** A beacon body's accepted events of one asset, as the intake hands them over. */
export interface AcceptedGroup {
  asset: BeaconAsset;
  events: BeaconEvent[];
}

/** A body's group with what the intake knows of its sender and arrival. */
export interface AcceptedBody extends AcceptedGroup {
  traits: ViewerTraits;
  receivedAt: number;
}

/** The events of one view in one beacon body: one stored row. */
interface Batch {
  assetId: string;
  viewId: string;
  asset: BeaconAsset;
  viewerId: string;
  traits: ViewerTraits;
  receivedAt: number;
  firstT: number;
  /** `viewend` or `ended` among them. */
  ends: boolean;
  events: EventTuple[];
}

/** A body's events grouped by view, in their order (a player's body holds one view: no map then). */
function batchesOf(body: AcceptedBody, events: BeaconEvent[]): Batch[] {
  const batch = (e: BeaconEvent): Batch => ({
    assetId: e.assetId,
    viewId: e.viewId,
    asset: body.asset,
    viewerId: e.viewerId,
    traits: body.traits,
    receivedAt: body.receivedAt,
    firstT: e.t,
    ends: false,
    events: [],
  });
  const first = events[0]!;
  const one = events.every((e) => e.viewId === first.viewId);
  const byView = new Map<string, Batch>();
  const single = one ? batch(first) : null;
  for (const e of events) {
    let b = single ?? byView.get(e.viewId);
    if (!b) {
      b = batch(e);
      byView.set(e.viewId, b);
    }
    b.events.push(eventTuple(e));
    if (e.t < b.firstT) b.firstT = e.t;
    if (e.type === "viewend" || e.type === "ended") b.ends = true;
  }
  return single ? [single] : [...byView.values()];
}

/**
 * One group commit of many beacon bodies: each body's events of one view
 * become one `analytics_event_batches` row, and their views are opened or
 * touched (`last_seen_at`, and `end_seen_at` at `viewend`/`ended`); a
 * view's traits (country, browser…) are those of its first beacon. Two
 * JSON texts (`json_each` unpacks them): no per-row binding or query
 * building on the event loop; a row's events are a JSON text inside the
 * first (a string SQLite stores as it is, not an array it renders again).
 */
function prepare(batches: Batch[], now: number): StoreWrite {
  const views = new Map<string, [string, string, string, string, string, string, string, string, string, number, number, number | null]>();
  for (const b of batches) {
    const key = `${b.assetId}\u0000${b.viewId}`;
    const ends = b.ends ? b.receivedAt : null;
    const v = views.get(key);
    if (v) {
      v[10] = Math.max(v[10], b.receivedAt);
      if (ends !== null) v[11] = ends;
      continue;
    }
    const t = b.traits;
    views.set(key, [b.assetId, b.viewId, b.asset.orgId, b.asset.kind, b.viewerId, t.country, t.browser, t.os, t.deviceType, b.receivedAt, b.receivedAt, ends]);
  }
  return {
    id: crypto.randomUUID(),
    at: now,
    // Each row's events as their JSON text, stored as sent: `value ->> 4` of a nested array made SQLite render it
    // again (a third of the insert's CPU, bench/beacons-cpu.ts).
    batches: JSON.stringify(batches.map((b) => [b.assetId, b.viewId, b.firstT, b.receivedAt, JSON.stringify(b.events)])),
    views: JSON.stringify([...views.values()]),
  };
}

/**
 * Group commit of beacons: the intake answers 204 once a body's events are
 * accepted here; every 25 ms (or every 2,000 events) one write transaction
 * stores all waiting bodies (`writeBatches`). A failed write keeps its
 * events, first in line, and is tried again after 100 ms, doubling to 5 s;
 * new beacons wait behind them within the same bound (MAX_PENDING). `stop`
 * refuses new events and writes the waiting ones, retrying for 10 s.
 */
export function createBeaconWriter(deps: { store: BeaconStore; logger: Logger; sleep?: (ms: number) => Promise<void> }) {
  const sleep = deps.sleep ?? ((ms: number) => Bun.sleep(ms));
  let pending: Batch[] = [];
  let pendingEvents = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let flushing: Promise<void> | null = null;
  let dropped = 0;
  let failures = 0;
  let stopped = false;

  function schedule(): void {
    if (flushing) return; // the running flush writes what came meanwhile
    if (pendingEvents >= FLUSH_AT) void flush();
    else timer ??= setTimeout(() => void flush(), FLUSH_DELAY_MS);
  }

  let stopAt = Number.POSITIVE_INFINITY;

  /** The write being stored or to be retried (as it was: its id makes a retry of a lost answer store nothing twice). */
  let current: { write: StoreWrite; events: number } | null = null;

  /** Writes everything waiting; a failed write is tried again first, as it was (until a stop's deadline). */
  async function drain(): Promise<void> {
    let delay = RETRY_FIRST_MS;
    while (current || pending.length > 0) {
      if (!current) {
        current = { write: prepare(pending, Date.now()), events: pendingEvents };
        pending = [];
        pendingEvents = 0;
      }
      const w = current;
      try {
        await deps.store.write(w.write);
        current = null;
        delay = RETRY_FIRST_MS;
      } catch (err) {
        failures++;
        deps.logger.warn("Cannot store beacons, retrying", { err, events: w.events, retry_in_ms: delay });
        if (Date.now() + delay > stopAt) return;
        await sleep(delay);
        delay = Math.min(RETRY_MAX_MS, delay * 2);
      }
    }
  }

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    if (flushing) return flushing;
    const run = drain().finally(() => {
      flushing = null;
    });
    flushing = run;
    return run;
  }

  return {
    /** Accepts a body's events of one asset for writing; answers how many were dropped because too many wait (or the writer stopped). */
    add(body: AcceptedBody): number {
      const room = stopped ? 0 : Math.max(0, MAX_PENDING - pendingEvents - (current?.events ?? 0));
      const taken = body.events.length <= room ? body.events : body.events.slice(0, room);
      dropped += body.events.length - taken.length;
      if (taken.length === 0) return body.events.length;
      for (const b of batchesOf(body, taken)) pending.push(b);
      pendingEvents += taken.length;
      schedule();
      return body.events.length - taken.length;
    },
    /** Resolves once every event accepted so far is stored (a failing database is retried meanwhile). */
    flush,
    /** Refuses new events, then stores the waiting ones, retrying a failing database for 10 s; logs what is lost past that. */
    async stop(): Promise<void> {
      stopped = true;
      stopAt = Date.now() + STOP_RETRY_MS;
      await flush();
      const lost = pendingEvents + (current?.events ?? 0);
      if (lost > 0) deps.logger.error("Beacons not stored at stop: the database kept failing", { events: lost });
      await deps.store.close();
    },
    /** Events refused because too many waited, or after stop. */
    get dropped() {
      return dropped;
    },
    /** Writes that failed and were retried. */
    get failures() {
      return failures;
    },
    /** Events accepted and not yet stored. */
    get waiting() {
      return pendingEvents + (current?.events ?? 0);
    },
  };
}

export type BeaconWriter = ReturnType<typeof createBeaconWriter>;
