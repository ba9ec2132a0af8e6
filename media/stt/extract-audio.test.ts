import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { extractSpeechAudio } from "./extract-audio.ts";

setDefaultTimeout(120_000);

const fixtures = path.join(import.meta.dir, "../../fixtures");
const dir = mkdtempSync(path.join(tmpdir(), "stt-wav-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const hasFfmpeg = Bun.which("ffmpeg") !== null;

/** The RIFF header of a 16 kHz mono s16 PCM WAV, with a data chunk right after it. */
function expectSpeechWav(file: string, seconds: number) {
  const b = readFileSync(file);
  expect(b.toString("ascii", 0, 4)).toBe("RIFF");
  expect(b.toString("ascii", 8, 12)).toBe("WAVE");
  expect(b.readUInt16LE(20)).toBe(1); // PCM
  expect(b.readUInt16LE(22)).toBe(1); // mono
  expect(b.readUInt32LE(24)).toBe(16000);
  expect(b.readUInt16LE(34)).toBe(16);
  expect(b.toString("ascii", 36, 40)).toBe("data");
  expect((b.length - 44) / 32000).toBeCloseTo(seconds, 0);
}

describe("extractSpeechAudio", () => {
  test.skipIf(!hasFfmpeg)("native ffmpeg: a 16 kHz mono s16 WAV with the plain 44-byte header", async () => {
    const out = path.join(dir, "native", "a.wav");
    expect(await extractSpeechAudio(path.join(fixtures, "speech-en-10s.mp4"), out)).toEqual({ backend: "native" });
    expectSpeechWav(out, 10);
  });

  test("ffmpeg.wasm (the transcoder's core) gives the same", async () => {
    const out = path.join(dir, "wasm", "a.wav");
    expect(await extractSpeechAudio(path.join(fixtures, "speech-en-10s.mp4"), out, { backend: "wasm" })).toEqual({ backend: "wasm" });
    expectSpeechWav(out, 10);
  }, 120_000);

  test.skipIf(!hasFfmpeg)("a video without audio: NO_AUDIO; broken input: AUDIO_EXTRACTION_FAILED", async () => {
    await expect(extractSpeechAudio(path.join(fixtures, "video-only-2s.mp4"), path.join(dir, "x.wav"))).rejects.toMatchObject({ name: "SttError", code: "NO_AUDIO" });
    await expect(extractSpeechAudio(path.join(fixtures, "corrupt.mp4"), path.join(dir, "y.wav"))).rejects.toMatchObject({ name: "SttError", code: "AUDIO_EXTRACTION_FAILED" });
  });
});
