import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { hasVoice, speak, speakAll, speechTexts, type Voice } from "../../fixtures/speech/make-speech.ts";
import { extractSpeechAudio } from "./extract-audio.ts";
import { createPocketsphinxTranscriber, findPocketsphinx, parsePocketsphinxOutput } from "./pocketsphinx.ts";
import { normalizeWords } from "./word-accuracy.ts";

setDefaultTimeout(120_000);

const ps = findPocketsphinx();
const dir = mkdtempSync(path.join(tmpdir(), "stt-ps-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("parses -time yes output: fillers dropped, alternates lose their (n), hypothesis lines ignored", () => {
  const out = [
    "we are the old",
    "<s> 0.000 0.220 0.999200",
    "we 0.230 0.350 0.265072",
    "<sil> 0.360 0.510 0.860951",
    "[NOISE] 0.520 0.600 0.5",
    "are 0.610 0.900 0.585457",
    "the(2) 2.040 2.220 0.243957",
    "++GARBAGE++ 2.230 2.240 0.1",
    "old 2.250 2.440 0.351263",
    "</s> 2.450 2.760 1.000000",
  ].join("\n");
  expect(parsePocketsphinxOutput(out)).toEqual([
    { text: "we", start: 0.23, end: 0.35, confidence: 0.265072 },
    { text: "are", start: 0.61, end: 0.9, confidence: 0.585457 },
    { text: "the", start: 2.04, end: 2.22, confidence: 0.243957 },
    { text: "old", start: 2.25, end: 2.44, confidence: 0.351263 },
  ]);
});

/** Synthetic speech makes a poor acoustic match (~40-50% word accuracy, README): ask only for several spoken words. */
async function expectSpeechRecognised(wav: string, text: string) {
  if (!ps) throw new Error("unreachable");
  const durationSeconds = (Bun.file(wav).size - 44) / 32000;
  const words = await createPocketsphinxTranscriber(ps).transcribe(wav);
  let last = 0;
  for (const w of words) {
    expect(w.start).toBeGreaterThanOrEqual(last);
    expect(w.end).toBeGreaterThanOrEqual(w.start);
    expect(w.end).toBeLessThanOrEqual(durationSeconds + 0.05);
    last = w.start;
  }
  const spoken = new Set(normalizeWords(text));
  const hits = new Set(words.map((w) => w.text.toLowerCase()).filter((w) => spoken.has(w)));
  expect(hits.size).toBeGreaterThanOrEqual(4);
}

describe.skipIf(!ps)("pocketsphinx on the speech corpus", () => {
  // One text per voice keeps the file fast (~0.35x realtime per 12 s clip); bench:transcripts runs them all.
  const texts = speechTexts().slice(0, 1);
  for (const voice of ["espeak-ng", "flite"] as Voice[]) {
    for (const t of texts) {
      test.skipIf(!hasVoice(voice))(
        `${voice} reading ${t.name}: words in time order, within the duration, several of them spoken`,
        async () => {
          const raw = path.join(dir, `${voice}-${t.name}.wav`);
          const wav = path.join(dir, `${voice}-${t.name}-16k.wav`);
          await speak(t.file, voice, raw);
          await extractSpeechAudio(raw, wav);
          await expectSpeechRecognised(wav, t.text);
        },
        120_000,
      );
    }
  }

  test("the committed clip fixtures/speech-en-10s.mp4 (espeak-ng reading travel.txt)", async () => {
    const wav = path.join(dir, "clip.wav");
    await extractSpeechAudio(path.join(import.meta.dir, "../../fixtures/speech-en-10s.mp4"), wav);
    await expectSpeechRecognised(wav, speechTexts().find((t) => t.name === "travel")?.text ?? "");
  }, 120_000);

  test("a 40 s clip is cut at pauses and decoded by two processes: times stay the source's, in order", async () => {
    if (!ps || !hasVoice("espeak-ng")) return;
    const texts = speechTexts().slice(0, 3);
    const wav = path.join(dir, "long.wav");
    await speakAll(
      texts.map((t) => t.file),
      "espeak-ng",
      wav,
      dir,
    );
    const two = await createPocketsphinxTranscriber(ps, undefined, { parallel: 2 }).transcribe(wav);
    const seconds = (Bun.file(wav).size - 44) / 32000;
    expect(seconds).toBeGreaterThan(30);
    let last = 0;
    for (const w of two) {
      expect(w.start).toBeGreaterThanOrEqual(last);
      expect(w.end).toBeLessThanOrEqual(seconds + 0.05);
      last = w.start;
    }
    // Both see speech across the whole clip (the second piece's words are offset, not restarted at 0).
    expect(two.at(-1)?.start ?? 0).toBeGreaterThan(seconds * 0.7);
    expect(two.some((w) => w.start < 5)).toBe(true);
  }, 120_000);

  test("abort kills the run", async () => {
    if (!ps) return;
    const wav = path.join(dir, "abort.wav");
    await extractSpeechAudio(path.join(import.meta.dir, "../../fixtures/speech-en-10s.mp4"), wav);
    const ac = new AbortController();
    const run = createPocketsphinxTranscriber(ps).transcribe(wav, { signal: ac.signal });
    ac.abort();
    await expect(run).rejects.toMatchObject({ name: "SttError", code: "CANCELLED" });
  });
});
