import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { extractSpeechAudio } from "./extract-audio.ts";
import { createWhisperTranscriber, findWhisperModel, loadSherpa, spreadWords } from "./whisper.ts";

setDefaultTimeout(120_000);

const dir = mkdtempSync(path.join(tmpdir(), "stt-whisper-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("spreadWords spreads a window's words over it by length", () => {
  const ws = spreadWords("a bbb", 10, 16);
  expect(ws.map((w) => w.text)).toEqual(["a", "bbb"]);
  expect(ws[0]?.start).toBe(10);
  expect(ws[0]?.end).toBeCloseTo(12, 6);
  expect(ws[1]?.end).toBeCloseTo(16, 6);
});

test("findWhisperModel finds a sherpa-onnx whisper layout (int8 preferred) from its directory or a file in it", () => {
  const m = path.join(dir, "sherpa-onnx-whisper-tiny.en");
  mkdirSync(m);
  for (const f of ["tiny.en-encoder.onnx", "tiny.en-encoder.int8.onnx", "tiny.en-decoder.int8.onnx", "tiny.en-tokens.txt"]) writeFileSync(path.join(m, f), "");
  expect(findWhisperModel(m)).toEqual({ encoder: path.join(m, "tiny.en-encoder.int8.onnx"), decoder: path.join(m, "tiny.en-decoder.int8.onnx"), tokens: path.join(m, "tiny.en-tokens.txt") });
  expect(findWhisperModel(path.join(m, "tiny.en-tokens.txt"))?.tokens).toBe(path.join(m, "tiny.en-tokens.txt"));
  expect(findWhisperModel(dir)).toBeNull();
  expect(findWhisperModel("/nonexistent")).toBeNull();
});

test("sherpa-onnx-node (optionalDependency) loads under Bun when installed", async () => {
  const sherpa = await loadSherpa();
  if (sherpa) expect(typeof sherpa.OfflineRecognizer).toBe("function");
});

// No model ships and none can be downloaded here: this runs only where the operator has one.
describe.skipIf(!process.env.STT_MODEL_PATH)("whisper with STT_MODEL_PATH", () => {
  test("transcribes the committed speech clip", async () => {
    const t = await createWhisperTranscriber(process.env.STT_MODEL_PATH ?? "");
    expect(t?.name).toBe("whisper");
    const wav = path.join(dir, "clip.wav");
    await extractSpeechAudio(path.join(import.meta.dir, "../../fixtures/speech-en-10s.mp4"), wav);
    const words = (await t?.transcribe(wav)) ?? [];
    expect(words.map((w) => w.text.toLowerCase()).join(" ")).toContain("train");
    for (const w of words) expect(w.end).toBeLessThanOrEqual(10.01);
  }, 60_000);
});
