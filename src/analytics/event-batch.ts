import type { EventType, ViewEvent } from "./event-types.ts";

/** One stored event in a batch row's `events` array: `[type, t, player_time, height, bitrate, code, startup_ms]`. */
export type EventTuple = [EventType, number, number, number | null, number | null, string | null, number | null];

export const eventTuple = (e: ViewEvent): EventTuple => [e.type, e.t, e.playerTime, e.height, e.bitrate, e.code, e.startupMs];

const eventOf = (x: EventTuple): ViewEvent => ({ type: x[0], t: x[1], playerTime: x[2], height: x[3], bitrate: x[4], code: x[5], startupMs: x[6] });

/** One stored batch row as the closer reads it, in `(first_t, seq)` order. */
export interface StoredBatch {
  seq: number;
  firstT: number;
  events: EventTuple[];
}

interface Held {
  t: number;
  seq: number;
  i: number;
  e: EventTuple;
}

const before = (a: Held, b: Held) => a.t < b.t || (a.t === b.t && (a.seq < b.seq || (a.seq === b.seq && a.i < b.i)));

/** A binary min-heap of held events in `(t, seq, index)` order. */
function heldHeap() {
  const h: Held[] = [];
  return {
    get size() {
      return h.length;
    },
    peek: (): Held | undefined => h[0],
    push(x: Held): void {
      h.push(x);
      for (let i = h.length - 1; i > 0; ) {
        const p = (i - 1) >> 1;
        if (!before(h[i]!, h[p]!)) break;
        [h[i], h[p]] = [h[p]!, h[i]!];
        i = p;
      }
    },
    pop(): Held {
      const top = h[0]!;
      const last = h.pop()!;
      if (h.length > 0) {
        h[0] = last;
        for (let i = 0; ; ) {
          const l = 2 * i + 1;
          const r = l + 1;
          let m = i;
          if (l < h.length && before(h[l]!, h[m]!)) m = l;
          if (r < h.length && before(h[r]!, h[m]!)) m = r;
          if (m === i) break;
          [h[i], h[m]] = [h[m]!, h[i]!];
          i = m;
        }
      }
      return top;
    },
  };
}

/** Events handed to the fold at a time. */
const EMIT_AT = 1_000;
/** Events held for ordering at most: a player's batches follow each other in time, so only a hostile one comes near it. */
export const MAX_HELD = 50_000;

/**
 * A view's events in `(t, seq, index)` order from its batch rows read in
 * `(first_t, seq)` order, as one `ORDER BY t, seq` over per-event rows
 * would give them: a held event is final once a batch starting later than
 * it has been read (no batch to come can hold an earlier one). Memory is
 * bounded: at most MAX_HELD events are held (past it the earliest are
 * emitted, so only such a hostile view's order is approximate).
 */
export function eventMerger(emit: (events: ViewEvent[]) => void, maxHeld = MAX_HELD) {
  const heap = heldHeap();
  let out: ViewEvent[] = [];
  const take = () => {
    out.push(eventOf(heap.pop().e));
    if (out.length >= EMIT_AT) {
      emit(out);
      out = [];
    }
  };
  return {
    add(batch: StoredBatch): void {
      while (heap.size > 0 && heap.peek()!.t < batch.firstT) take();
      for (let i = 0; i < batch.events.length; i++) heap.push({ t: batch.events[i]![1], seq: batch.seq, i, e: batch.events[i]! });
      while (heap.size > maxHeld) take();
    },
    end(): void {
      while (heap.size > 0) take();
      if (out.length > 0) emit(out);
      out = [];
    },
  };
}
