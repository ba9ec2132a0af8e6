import { expect, test } from "bun:test";
import { type EventTuple, eventMerger } from "./event-batch.ts";
import type { ViewEvent } from "./event-types.ts";

const ev = (t: number, type: EventTuple[0] = "heartbeat"): EventTuple => [type, t, t / 1000, null, null, null, null];

test("a view's events come out in (t, arrival) order from batches that overlap in time", () => {
  const out: ViewEvent[] = [];
  const m = eventMerger((events) => out.push(...events));
  // Read in (first_t, seq) order, as the closer reads them.
  m.add({ seq: 1, firstT: 0, events: [ev(0, "viewstart"), ev(20, "pause"), ev(5, "playing")] });
  m.add({ seq: 7, firstT: 10, events: [ev(10, "waiting"), ev(15)] });
  m.add({ seq: 3, firstT: 10, events: [ev(10, "seeking")] });
  m.add({ seq: 9, firstT: 30, events: [ev(30, "viewend")] });
  m.end();
  expect(out.map((e) => [e.t, e.type])).toEqual([
    [0, "viewstart"],
    [5, "playing"],
    [10, "seeking"],
    [10, "waiting"],
    [15, "heartbeat"],
    [20, "pause"],
    [30, "viewend"],
  ]);
});

test("a hostile batch cannot make the merger hold more than its bound: events are handed on before the end", () => {
  const handed: number[] = [];
  const m = eventMerger((events) => handed.push(events.length), 10);
  m.add({ seq: 1, firstT: 0, events: Array.from({ length: 2_000 }, (_, i) => ev(2_000 - i)) });
  expect(handed.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1_000);
  m.end();
  expect(handed.reduce((a, b) => a + b, 0)).toBe(2_000);
});
