import { describe, expect, test } from "bun:test";
import type { EventType, ViewEvent } from "./event-types.ts";
import { MAX_GAP_MS, rebufferRatio, viewFolder } from "./view-figures.ts";

const ev = (type: EventType, t: number, more: Partial<ViewEvent> = {}): ViewEvent => ({ type, t, playerTime: 0, height: null, bitrate: null, code: null, startupMs: null, ...more });
const fold = (events: ViewEvent[], pageSize = events.length) => {
  const f = viewFolder();
  for (let i = 0; i < events.length; i += pageSize) f.add(events.slice(i, i + pageSize));
  return f.figures();
};

describe("view figures", () => {
  test("startup from viewstart to the first playing; a wait before it is startup, not a stall; a seek's wait is not a stall", () => {
    const f = fold([ev("viewstart", 0), ev("waiting", 100), ev("playing", 800), ev("seeking", 2000), ev("waiting", 2100), ev("seeked", 2500), ev("playing", 2600), ev("viewend", 3600)]);
    expect(f.startupMs).toBe(800);
    expect(f.stallCount).toBe(0);
    expect(f.stallMs).toBe(0);
    expect(f.watchMs).toBe(1200 + 1000);
  });

  test("stalls, time-weighted rendition, errors, paged folding gives the same figures", () => {
    const events = [
      ev("viewstart", 0),
      ev("rendition_change", 0, { height: 360, bitrate: 800_000 }),
      ev("playing", 300, { startupMs: 250 }),
      ev("rendition_change", 1300, { height: 720, bitrate: 2_800_000 }),
      ev("waiting", 4300),
      ev("playing", 5300),
      ev("error", 5400, { code: "3" }),
      ev("waiting", 6300),
      ev("pause", 6800),
      ev("playing", 7000),
      ev("ended", 8000),
    ];
    const f = fold(events);
    expect(f).toEqual(fold(events, 2));
    expect(f.startupMs).toBe(250);
    expect(f.stallCount).toBe(2);
    expect(f.stallMs).toBe(1000 + 500);
    expect(f.watchMs).toBe(1000 + 3000 + 1000 + 1000);
    expect(f.avgHeight).toBe(Math.round((360 * 1000 + 720 * 5000) / 6000));
    expect(f.errors).toBe(1);
    expect(f.exitBeforeStart).toBe(false);
    expect(rebufferRatio(f.watchMs, f.stallMs)).toBeCloseTo(1500 / 7500, 10);
  });

  test("a view that never played exits before start; a long silence counts at most MAX_GAP_MS", () => {
    expect(fold([ev("viewstart", 0), ev("waiting", 10), ev("viewend", 5000)])).toMatchObject({ exitBeforeStart: true, startupMs: null, watchMs: 0, stallCount: 0 });
    expect(fold([ev("viewstart", 0), ev("playing", 0), ev("heartbeat", 3_600_000)]).watchMs).toBe(MAX_GAP_MS);
  });
});
