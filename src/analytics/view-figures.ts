import type { ViewEvent, ViewFigures } from "./event-types.ts";

/**
 * Longest interval between two events counted as watching or stalling: the
 * player sends a heartbeat every 10 s, so a longer gap is a tab asleep or a
 * lost batch, not 20 minutes of viewing.
 */
export const MAX_GAP_MS = 15_000;

/**
 * The figures of one view from its events in order (`t`, then arrival),
 * fed in pages so a view of any length folds in bounded memory:
 * `const f = viewFolder(); f.add(page)…; f.figures()`.
 *
 * - watching: from `playing` until `pause`, `seeking`, `waiting`, `ended`,
 *   `viewend` (or the last event);
 * - a stall is a `waiting` after the first frame (before it, it is startup;
 *   a seek's wait is not rebuffering, as Mux counts it): it lasts until the
 *   next `playing`, `pause`, `seeking`, `ended` or `viewend`;
 * - bitrate and height are weighted by watched time at each rendition.
 */
export function viewFolder() {
  let last: number | null = null;
  let startAt: number | null = null;
  let started = false;
  let playing = false;
  let stalled = false;
  /** Between `seeking` and the next `playing`: a wait then is the seek's. */
  let seeking = false;
  let height: number | null = null;
  let bitrate: number | null = null;
  const f = { watchMs: 0, startupMs: null as number | null, stallCount: 0, stallMs: 0, errors: 0 };
  let weighted = 0;
  let bitrateSum = 0;
  let heightSum = 0;

  function advance(t: number): void {
    if (last === null) return;
    const dt = Math.min(MAX_GAP_MS, Math.max(0, t - last));
    if (stalled) f.stallMs += dt;
    else if (playing) {
      f.watchMs += dt;
      if (height !== null && bitrate !== null) {
        weighted += dt;
        bitrateSum += bitrate * dt;
        heightSum += height * dt;
      }
    }
  }

  function add(e: ViewEvent): void {
    advance(e.t);
    last = last === null ? e.t : Math.max(last, e.t);
    switch (e.type) {
      case "viewstart":
        if (startAt === null) startAt = e.t;
        break;
      case "playing":
        if (!started) {
          started = true;
          f.startupMs = e.startupMs ?? (startAt !== null ? Math.max(0, e.t - startAt) : null);
        }
        playing = true;
        stalled = false;
        seeking = false;
        break;
      case "waiting":
        if (started && !stalled && !seeking) {
          f.stallCount++;
          stalled = true;
        }
        break;
      case "seeking":
        seeking = true;
        playing = false;
        stalled = false;
        break;
      case "pause":
      case "ended":
      case "viewend":
        playing = false;
        stalled = false;
        break;
      case "rendition_change":
        if (e.height !== null) height = e.height;
        if (e.bitrate !== null) bitrate = e.bitrate;
        break;
      case "error":
        f.errors++;
        break;
      default:
        break;
    }
  }

  return {
    add(events: ViewEvent[]): void {
      for (const e of events) add(e);
    },
    figures(): ViewFigures {
      return {
        ...f,
        avgBitrate: weighted > 0 ? Math.round(bitrateSum / weighted) : bitrate,
        avgHeight: weighted > 0 ? Math.round(heightSum / weighted) : height,
        exitBeforeStart: !started,
      };
    },
  };
}

/** Stalled ÷ (watched + stalled); 0 when nothing was watched or stalled. */
export function rebufferRatio(watchMs: number, stallMs: number): number {
  const total = watchMs + stallMs;
  return total > 0 ? stallMs / total : 0;
}
