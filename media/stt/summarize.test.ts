import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { summarize } from "./summarize.ts";

const corpus = ["weather", "kitchen", "meeting", "travel", "garden"].map((n) => readFileSync(path.join(import.meta.dir, "../../fixtures/speech", `${n}.txt`), "utf8").trim());

describe("summarize", () => {
  test("picks real sentences of the transcript, in their original order", () => {
    const text = corpus.join(" ");
    const summary = summarize(text, "A title");
    const sentences = text.match(/[^.]+\./g)?.map((s) => s.trim()) ?? [];
    const picked = summary.match(/[^.]+\./g)?.map((s) => s.trim()) ?? [];
    expect(picked.length).toBe(3);
    const at = picked.map((s) => sentences.indexOf(s));
    for (const i of at) expect(i).toBeGreaterThanOrEqual(0);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
  });

  test("an unpunctuated machine transcript is cut into chunks of words first", () => {
    const text = corpus.join(" ").replace(/[.,]/g, "").toLowerCase();
    const summary = summarize(text, "A title");
    expect(summary.length).toBeGreaterThan(0);
    expect(summary.length).toBeLessThan(text.length);
    for (const w of summary.replace(/\./g, "").split(" ")) expect(text.split(" ")).toContain(w);
  });

  test("too short a transcript: the title", () => {
    expect(summarize("", "  My video ")).toBe("My video");
    expect(summarize("hello there general", "My video")).toBe("My video");
  });
});
