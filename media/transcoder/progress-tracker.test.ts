import { describe, expect, test } from "bun:test";
import { createProgressTracker } from "./progress-tracker.ts";

describe("createProgressTracker", () => {
  test("maps -progress out_time_us against the duration, monotonic, 100 only at finish", () => {
    const seen: number[] = [];
    const t = createProgressTracker(10, [100], (p) => seen.push(p));
    t.line("out_time_us=2500000");
    t.line("out_time_ms=5000000"); // ffmpeg's out_time_ms is microseconds too
    t.line("out_time_us=4000000"); // going backwards is ignored
    t.line("out_time_us=12000000"); // past the probed duration is capped below 100
    t.line("progress=end");
    expect(seen).toEqual([0, 25, 50, 99.9]);
    t.finish();
    t.finish();
    expect(seen).toEqual([0, 25, 50, 99.9, 100]);
  });

  test("understands classic stats lines", () => {
    const seen: number[] = [];
    const t = createProgressTracker(100, [100], (p) => seen.push(p));
    t.line("frame=  10 fps=0.0 q=0.0 size=N/A time=00:00:50.00 bitrate=N/A speed=1x");
    expect(seen.at(-1)).toBe(50);
  });

  test("weights phases", () => {
    const seen: number[] = [];
    const t = createProgressTracker(4, [90, 10], (p) => seen.push(p));
    t.line("out_time_us=2000000");
    t.phase(1);
    t.line("out_time_us=2000000");
    expect(seen).toEqual([0, 45, 90, 95]);
  });

  test("parts of a phase run at once: the weighted sum of their progress, still monotonic", () => {
    const seen: number[] = [];
    const t = createProgressTracker(10, [90, 10], (p) => seen.push(p));
    t.phase(0, [1, 3]);
    t.line("out_time_us=10000000", 0); // the small part is done: 1/4 of the phase
    t.line("out_time_us=2000000", 1);
    t.line("out_time_us=1000000", 1); // a part going backwards is ignored
    t.line("out_time_us=5000000", 0); // so is a finished part going backwards
    t.line("out_time_us=10000000", 1);
    t.line("out_time_us=10000000", 7); // no such part
    t.phase(1);
    t.line("out_time_us=5000000");
    expect(seen).toEqual([0, 22.5, 36, 90, 95]);
  });

  test("without a duration only 0 and 100 are reported; a throwing callback is contained", () => {
    const seen: number[] = [];
    const t = createProgressTracker(null, [100], (p) => {
      seen.push(p);
      throw new Error("ui bug");
    });
    t.line("out_time_us=1000000");
    t.finish();
    expect(seen).toEqual([0, 100]);
  });
});
