import { sql } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import { analyticsEvents, analyticsViews } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";
import type { BeaconEvent } from "./beacon-input.ts";
import type { BeaconAsset } from "./asset-lookup.ts";
import type { ViewerTraits } from "./viewer-traits.ts";

/** Events waiting in memory at most; past it new beacons are dropped (counted), so a flood cannot grow memory. */
export const MAX_PENDING = 50_000;
/** A flush starts this long after the first waiting event, or at once when this many wait. */
const FLUSH_DELAY_MS = 25;
const FLUSH_AT = 2_000;
/** Rows per INSERT statement (SQLite's bound on variables). */
const CHUNK = 200;

interface Pending {
  event: BeaconEvent;
  asset: BeaconAsset;
  traits: ViewerTraits;
  receivedAt: number;
}

/**
 * Group commit of beacons: the intake answers 204 once a batch's events are
 * accepted here; every 25 ms (or every 2,000 events) one write transaction
 * inserts all waiting events and opens or touches their views
 * (`last_seen_at`, and `end_seen_at` at `viewend`/`ended`). A view's
 * traits (country, browser…) are those of its first beacon.
 */
export function createBeaconWriter(deps: { database: Database; logger: Logger }) {
  let pending: Pending[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  let flushing: Promise<void> | null = null;
  let dropped = 0;

  function schedule(): void {
    if (flushing) return; // the running flush schedules the next one
    if (pending.length >= FLUSH_AT) void flush();
    else timer ??= setTimeout(() => void flush(), FLUSH_DELAY_MS);
  }

  async function write(batch: Pending[]): Promise<void> {
    const views = new Map<string, typeof analyticsViews.$inferInsert>();
    for (const p of batch) {
      const key = `${p.event.assetId}\u0000${p.event.viewId}`;
      const ends = p.event.type === "viewend" || p.event.type === "ended" ? p.receivedAt : null;
      const v = views.get(key);
      if (v) {
        v.lastSeenAt = Math.max(v.lastSeenAt, p.receivedAt);
        if (ends !== null) v.endSeenAt = ends;
        continue;
      }
      views.set(key, {
        assetId: p.event.assetId,
        viewId: p.event.viewId,
        orgId: p.asset.orgId,
        assetKind: p.asset.kind,
        viewerId: p.event.viewerId,
        ...p.traits,
        startedAt: p.receivedAt,
        lastSeenAt: p.receivedAt,
        endSeenAt: ends,
      });
    }
    const rows = batch.map((p) => [p.event.assetId, p.event.viewId, p.event.type, p.event.t, p.event.playerTime, p.event.height, p.event.bitrate, p.event.code, p.event.startupMs, p.receivedAt]);
    const viewRows = [...views.values()];
    await deps.database.write(async (tx) => {
      // One statement, one bound JSON text, unpacked by SQLite (json_each): no per-row binding or query building.
      await tx.run(sql`INSERT INTO ${analyticsEvents} (asset_id, view_id, type, t, player_time, height, bitrate, code, startup_ms, received_at)
        SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9
        FROM json_each(${JSON.stringify(rows)})`);
      for (let i = 0; i < viewRows.length; i += CHUNK / 2) {
        await tx
          .insert(analyticsViews)
          .values(viewRows.slice(i, i + CHUNK / 2))
          .onConflictDoUpdate({
            target: [analyticsViews.assetId, analyticsViews.viewId],
            set: { lastSeenAt: sql`max(${analyticsViews.lastSeenAt}, excluded.last_seen_at)`, endSeenAt: sql`coalesce(excluded.end_seen_at, ${analyticsViews.endSeenAt})` },
            setWhere: sql`${analyticsViews.closedAt} IS NULL`,
          });
      }
    });
  }

  async function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    if (flushing) return flushing;
    const run = (async () => {
      while (pending.length > 0) {
        const batch = pending;
        pending = [];
        try {
          await write(batch);
        } catch (err) {
          // Beacons are best effort (sendBeacon reads no answer): a failed batch is logged and lost, never retried forever.
          deps.logger.warn("Cannot store beacons", { err, events: batch.length });
        }
      }
    })();
    flushing = run;
    try {
      await run;
    } finally {
      flushing = null;
    }
  }

  return {
    /** Accepts events for writing; answers how many were dropped because too many wait. */
    add(items: Pending[]): number {
      const room = Math.max(0, MAX_PENDING - pending.length);
      const taken = items.length <= room ? items : items.slice(0, room);
      for (const p of taken) pending.push(p);
      dropped += items.length - taken.length;
      if (taken.length > 0) schedule();
      return items.length - taken.length;
    },
    flush,
    get dropped() {
      return dropped;
    },
  };
}

export type BeaconWriter = ReturnType<typeof createBeaconWriter>;
