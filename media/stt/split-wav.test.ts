import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { splitWavAtPauses, wavData } from "./split-wav.ts";

const dir = mkdtempSync(path.join(tmpdir(), "stt-split-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("cuts in the quiet near each even cut point; the pieces hold every sample", () => {
  // 10 s of a loud tone with silence at 4.0-4.5 s and 6.4-6.9 s.
  const rate = 16000;
  const samples = new Int16Array(10 * rate);
  for (let i = 0; i < samples.length; i++) {
    const t = i / rate;
    const quiet = (t >= 4 && t < 4.5) || (t >= 6.4 && t < 6.9);
    samples[i] = quiet ? 0 : Math.round(8000 * Math.sin(2 * Math.PI * 440 * t));
  }
  const h = Buffer.alloc(44);
  h.write("RIFF", 0, "ascii");
  h.writeUInt32LE(36 + samples.byteLength, 4);
  h.write("WAVEfmt ", 8, "ascii");
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write("data", 36, "ascii");
  h.writeUInt32LE(samples.byteLength, 40);
  const wav = path.join(dir, "in.wav");
  writeFileSync(wav, Buffer.concat([h, Buffer.from(samples.buffer)]));

  const pieces = splitWavAtPauses(wav, 2, path.join(dir, "p"));
  expect(pieces.length).toBe(2);
  expect(pieces[0]?.offset).toBe(0);
  // The even cut is 5 s; the nearest quiet is 4.0-4.5 s (the cut sits in it).
  expect(pieces[1]?.offset).toBeGreaterThanOrEqual(4);
  expect(pieces[1]?.offset).toBeLessThanOrEqual(4.5);
  const total = pieces.reduce((n, p) => n + wavData(readFileSync(p.path)).length, 0);
  expect(total).toBe(samples.byteLength);
});
