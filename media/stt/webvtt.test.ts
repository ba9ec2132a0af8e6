import { describe, expect, test } from "bun:test";
import type { Word } from "./types.ts";
import { buildWebVtt, formatVttTime, MAX_LINE_CHARS, parseVttTime, parseWebVtt } from "./webvtt.ts";

/** Words at a steady pace: `n` words of `text`, 0.3 s each with 0.05 s gaps, from `from`. */
function words(n: number, from = 0, text = (i: number) => `word${i}`): Word[] {
  return Array.from({ length: n }, (_, i) => ({ text: text(i), start: from + i * 0.35, end: from + i * 0.35 + 0.3 }));
}

function expectValid(vtt: string, duration: number) {
  const { cues } = parseWebVtt(vtt);
  let last = 0;
  for (const c of cues) {
    expect(c.start).toBeGreaterThanOrEqual(last);
    expect(c.end).toBeGreaterThan(c.start);
    expect(c.end).toBeLessThanOrEqual(duration);
    expect(c.lines.length).toBeGreaterThanOrEqual(1);
    expect(c.lines.length).toBeLessThanOrEqual(2);
    for (const l of c.lines) expect(l.length).toBeLessThanOrEqual(MAX_LINE_CHARS);
    last = c.end;
  }
  return cues;
}

describe("buildWebVtt", () => {
  test("starts with WEBVTT; cues of a few seconds, increasing, within the duration, ≤ 2 lines of ≤ 42 chars", () => {
    const ws = words(120);
    const duration = 42.5;
    const vtt = buildWebVtt(ws, { durationSeconds: duration });
    expect(vtt.startsWith("WEBVTT\n\n")).toBe(true);
    const cues = expectValid(vtt, duration);
    expect(cues.length).toBeGreaterThan(5);
    for (const c of cues) expect(c.end - c.start).toBeLessThanOrEqual(5.5);
    // Every word is in exactly one cue, in order.
    expect(cues.flatMap((c) => c.lines.join(" ").split(" "))).toEqual(ws.map((w) => w.text));
  });

  test("a pause starts a new cue; words past the end are dropped and the last cue is clamped", () => {
    const ws = [...words(3), ...words(3, 5)];
    ws.push({ text: "late", start: 9.9, end: 11 });
    ws.push({ text: "gone", start: 10.5, end: 11 });
    const cues = expectValid(buildWebVtt(ws, { durationSeconds: 10 }), 10);
    expect(cues.map((c) => c.lines.join(" "))).toEqual(["word0 word1 word2", "word0 word1 word2", "late"]);
    expect(cues.at(-1)?.end).toBe(10);
  });

  test("reserved characters are escaped and an over-long word is cut to the line length", () => {
    const long = "x".repeat(100);
    const vtt = buildWebVtt(
      [
        { text: "a<b&c", start: 0, end: 0.5 },
        { text: "-->", start: 0.6, end: 0.9 },
        { text: long, start: 1, end: 2 },
      ],
      { durationSeconds: 3 },
    );
    expect(vtt).toContain("a&lt;b&amp;c --&gt;");
    expect(vtt.split("\n").filter((l) => l.includes("-->")).length).toBeGreaterThanOrEqual(2);
    expectValid(vtt, 3);
  });

  test("no words: a valid file without cues", () => {
    const vtt = buildWebVtt([], { durationSeconds: 4 });
    expect(vtt).toBe("WEBVTT\n\n");
    expect(parseWebVtt(vtt).cues).toEqual([]);
  });

  test("timestamps round-trip as hh:mm:ss.mmm", () => {
    expect(formatVttTime(3723.4567)).toBe("01:02:03.457");
    expect(parseVttTime("01:02:03.457")).toBeCloseTo(3723.457, 6);
    expect(parseVttTime("02:03.450")).toBeCloseTo(123.45, 6);
  });
});
