import { describe, expect, test } from "bun:test";
import { TimestampRebaser } from "./timestamp-rebaser.ts";

type Tag = { type: "audio" | "video" | "data"; timestamp: number };

/** A/V interleaved like an encoder: video every 33 ms, audio every 23 ms, from `from` for `ms`. */
function av(from: number, ms: number): Tag[] {
  const tags: Tag[] = [];
  for (let t = 0; t < ms; t += 33) tags.push({ type: "video", timestamp: from + t });
  for (let t = 0; t < ms; t += 23) tags.push({ type: "audio", timestamp: from + t });
  return tags.sort((a, b) => a.timestamp - b.timestamp || (a.type === "video" ? -1 : 1));
}

function mapAll(r: TimestampRebaser, tags: Tag[], clock: { now: number }, realtime = true) {
  const out: Array<Tag & { out: number; waitMs: number; discontinuity: boolean }> = [];
  let prevIn: number | null = null;
  for (const t of tags) {
    if (realtime && prevIn !== null && t.timestamp > prevIn && t.timestamp - prevIn < 1000) clock.now += t.timestamp - prevIn;
    prevIn = t.timestamp;
    const m = r.map(t, clock.now);
    out.push({ ...t, out: m.timestamp, waitMs: m.waitMs, discontinuity: m.discontinuity });
  }
  return out;
}

function expectMonotonicPerTrack(out: Array<{ type: string; out: number }>) {
  for (const kind of ["audio", "video"]) {
    const ts = out.filter((o) => o.type === kind).map((o) => o.out);
    for (let i = 1; i < ts.length; i++) expect(ts[i]!).toBeGreaterThanOrEqual(ts[i - 1]!);
  }
}

/** Largest step between consecutive outputs of a track. */
function maxStep(out: Array<{ type: string; out: number }>, kind: string) {
  const ts = out.filter((o) => o.type === kind).map((o) => o.out);
  let m = 0;
  for (let i = 1; i < ts.length; i++) m = Math.max(m, ts[i]! - ts[i - 1]!);
  return m;
}

describe("TimestampRebaser", () => {
  test("a normal stream keeps its deltas, starts at 0, and is never held back", () => {
    const r = new TimestampRebaser();
    const tags = av(5000, 3000);
    const out = mapAll(r, tags, { now: 0 });
    expect(out[0]!.out).toBe(0);
    for (let i = 0; i < tags.length; i++) expect(out[i]!.out).toBe(tags[i]!.timestamp - 5000);
    expect(out.every((o) => o.waitMs === 0 && !o.discontinuity)).toBe(true);
    expect(r.stats().discontinuities).toBe(0);
  });

  test("a forward jump of hours mid-session continues one frame after the last output, for both tracks", () => {
    const r = new TimestampRebaser();
    const HOURS = 3 * 3600_000;
    const tags = [...av(0, 2000), ...av(2000 + HOURS, 2000)];
    const out = mapAll(r, tags, { now: 0 });
    expectMonotonicPerTrack(out);
    expect(maxStep(out, "video")).toBeLessThanOrEqual(66);
    expect(maxStep(out, "audio")).toBeLessThanOrEqual(66);
    const last = Math.max(...out.map((o) => o.out));
    expect(last).toBeGreaterThan(3900);
    expect(last).toBeLessThan(4100);
    // One jump of both tracks is absorbed once.
    expect(r.stats().discontinuities).toBe(1);
  });

  test("a backward jump mid-session is re-based forward, not replayed", () => {
    const r = new TimestampRebaser();
    const tags = [...av(100_000, 2000), ...av(0, 2000)];
    const out = mapAll(r, tags, { now: 0 });
    expectMonotonicPerTrack(out);
    expect(maxStep(out, "video")).toBeLessThanOrEqual(66);
    const last = Math.max(...out.map((o) => o.out));
    expect(last).toBeGreaterThan(3900);
    expect(last).toBeLessThan(4100);
    expect(r.stats().discontinuities).toBe(1);
  });

  test("a reconnect continues after the previous session, whether the encoder restarts at 0 or far ahead", () => {
    const r = new TimestampRebaser();
    const clock = { now: 0 };
    const first = mapAll(r, av(0, 2000), clock);
    const end1 = Math.max(...first.map((o) => o.out));
    clock.now += 5000; // the reconnect gap
    r.startSession();
    const second = mapAll(r, av(0, 1000), clock);
    expect(second[0]!.discontinuity).toBe(true);
    expect(second[0]!.out).toBeGreaterThan(end1);
    expect(second[0]!.out).toBeLessThanOrEqual(end1 + 33);
    const end2 = Math.max(...second.map((o) => o.out));
    r.startSession();
    const third = mapAll(r, av(7 * 3600_000, 1000), clock);
    expect(third[0]!.out).toBeGreaterThan(end2);
    expect(third[0]!.out).toBeLessThanOrEqual(end2 + 33);
    expectMonotonicPerTrack([...first, ...second, ...third]);
    expect(maxStep([...first, ...second, ...third], "video")).toBeLessThanOrEqual(66);
  });

  test("audio interleaved a little behind video is not a discontinuity", () => {
    const r = new TimestampRebaser();
    const tags: Tag[] = [];
    for (let t = 0; t < 3000; t += 33) {
      tags.push({ type: "video", timestamp: t + 200 });
      tags.push({ type: "audio", timestamp: t });
    }
    const out = mapAll(r, tags, { now: 0 });
    // Only the start: audio would begin below 0, so the base moves once; A/V keep their input offset.
    expect(r.stats().discontinuities).toBe(1);
    expectMonotonicPerTrack(out);
    expect(Math.min(...out.map((o) => o.out))).toBe(0);
    const audio = out.filter((o) => o.type === "audio");
    const video = out.filter((o) => o.type === "video");
    for (let i = 1; i < audio.length; i++) expect(video[i]!.out - audio[i]!.out).toBe(200);
  });

  test("a track that restarts behind its own last output after a reconnect is moved forward, never back", () => {
    const r = new TimestampRebaser();
    const clock = { now: 0 };
    const first = mapAll(r, av(0, 2000), clock);
    r.startSession();
    // The new encoder sends video 300 ms ahead of its audio.
    const tags: Tag[] = [];
    for (let t = 0; t < 1000; t += 33) tags.push({ type: "video", timestamp: t + 300 }, { type: "audio", timestamp: t });
    const second = mapAll(r, tags, clock);
    expectMonotonicPerTrack([...first, ...second]);
    expect(Math.min(...second.map((o) => o.out))).toBeGreaterThan(Math.max(...first.map((o) => o.out)) - 23);
  });

  test("media time cannot outrun the wall clock: small fast steps are held back beyond the lead", () => {
    const r = new TimestampRebaser({ maxGapMs: 1000, maxLeadMs: 2000 });
    // 900 ms of media per 33 ms of real time: each step passes the gap rule.
    let now = 0;
    let output = 0;
    for (let i = 0; i < 300; i++) {
      const m = r.map({ type: "video", timestamp: i * 900 }, now);
      now += 33 + m.waitMs; // the caller waits as told
      output = m.timestamp;
      expect(m.timestamp).toBeLessThanOrEqual(now + 2000 + 900);
    }
    expect(output).toBeLessThanOrEqual(now + 2000);
    // A publisher pushing faster than real time is paced, not re-timed.
    const fast = new TimestampRebaser({ maxLeadMs: 2000 });
    const waits = av(0, 6000).map((t) => fast.map(t, 0));
    expect(waits.find((w) => w.timestamp <= 2000)!.waitMs).toBe(0);
    expect(waits.at(-1)!.waitMs).toBeGreaterThan(3900);
    expect(waits.every((w, i) => w.timestamp === av(0, 6000)[i]!.timestamp)).toBe(true);
  });

  test("script data sits at the current position and is not a track", () => {
    const r = new TimestampRebaser();
    expect(r.map({ type: "data", timestamp: 999_999 }, 0).timestamp).toBe(0);
    r.map({ type: "video", timestamp: 50_000 }, 0);
    r.map({ type: "video", timestamp: 50_033 }, 33);
    expect(r.map({ type: "data", timestamp: 0 }, 40).timestamp).toBe(33);
    expect(r.stats()).toEqual({ discontinuities: 0, lastOutputMs: 33 });
  });

  test("the 32-bit wrap of RTMP timestamps reads as a backward jump and is re-based", () => {
    const r = new TimestampRebaser();
    const out = mapAll(r, [...av(2 ** 32 - 1000, 990), ...av(0, 1000)], { now: 0 });
    expectMonotonicPerTrack(out);
    expect(maxStep(out, "video")).toBeLessThanOrEqual(66);
  });
});
