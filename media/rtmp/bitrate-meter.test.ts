import { describe, expect, test } from "bun:test";
import { BitrateMeter } from "./bitrate-meter.ts";

/** Feeds `kbps` for `seconds` in 40 ms messages from `start`; the time the meter refused, or null. */
function feed(meter: BitrateMeter, kbps: number, seconds: number, start = 0): number | null {
  const perMessage = (kbps * 1000) / 8 / 25;
  for (let t = start; t < start + seconds * 1000; t += 40) if (!meter.add(perMessage, t)) return t;
  return null;
}

describe("bitrate meter (token bucket: cap, 5 s of burst)", () => {
  test("at or under the cap it never trips, however long", () => {
    expect(feed(new BitrateMeter(1000, 5, 0), 1000, 600)).toBeNull();
    expect(feed(new BitrateMeter(1000, 5, 0), 800, 600)).toBeNull();
  });

  test("a burst at the start (keyframe, encoder buffer) fits, then at the cap is fine", () => {
    const meter = new BitrateMeter(1000, 5, 0);
    expect(meter.add(4.5 * 125_000, 0)).toBe(true); // 4.5 s worth at once
    expect(feed(meter, 1000, 120, 40)).toBeNull();
  });

  test("over the cap it trips after burst / (rate - cap): 2x at 5 s, 4x at ~1.7 s", () => {
    const at2x = feed(new BitrateMeter(1000, 5, 0), 2000, 60)!;
    expect(at2x).toBeGreaterThan(4800);
    expect(at2x).toBeLessThan(5200);
    const at4x = feed(new BitrateMeter(1000, 5, 0), 4000, 60)!;
    expect(at4x).toBeGreaterThan(1500);
    expect(at4x).toBeLessThan(1800);
    // 10% over still trips, just later: no steady rate above the cap passes.
    expect(feed(new BitrateMeter(1000, 5, 0), 1100, 120)).not.toBeNull();
  });

  test("the measured rate is the average since the bucket was last full", () => {
    const meter = new BitrateMeter(1000, 5, 0);
    feed(meter, 500, 10); // under: stays full
    const tripped = feed(meter, 4000, 10, 10_000)!;
    expect(meter.measuredKbps(tripped)).toBeGreaterThan(3800);
    expect(meter.measuredKbps(tripped)).toBeLessThan(4200);
    expect(meter.measuredOverMs(tripped)).toBeLessThan(2000);
  });

  test("refills at the cap: full again after burstSeconds of silence", () => {
    const meter = new BitrateMeter(1000, 5, 0);
    expect(meter.add(5 * 125_000, 0)).toBe(true);
    expect(meter.isFull(2500)).toBe(false);
    expect(meter.add(3 * 125_000, 2500)).toBe(false); // only 2.5 s refilled
    expect(meter.isFull(20_000)).toBe(true);
  });
});
