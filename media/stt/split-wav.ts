import { readFileSync, writeFileSync } from "node:fs";

/** 16 kHz mono s16: 10 ms frames of 160 samples. */
const RATE = 16000;
const FRAME = 160;

export interface WavPiece {
  path: string;
  /** Seconds from the original file's start. */
  offset: number;
}

/** The PCM bytes of a WAV (the `data` chunk, wherever it is). */
export function wavData(buf: Buffer): Buffer {
  let at = 12;
  while (at + 8 <= buf.length) {
    const id = buf.toString("ascii", at, at + 4);
    const size = buf.readUInt32LE(at + 4);
    if (id === "data") return buf.subarray(at + 8, Math.min(buf.length, at + 8 + size));
    at += 8 + size + (size % 2);
  }
  throw new Error("no data chunk in WAV");
}

function wavHeader(bytes: number): Buffer {
  const h = Buffer.alloc(44);
  h.write("RIFF", 0, "ascii");
  h.writeUInt32LE(36 + bytes, 4);
  h.write("WAVEfmt ", 8, "ascii");
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(RATE, 24);
  h.writeUInt32LE(RATE * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write("data", 36, "ascii");
  h.writeUInt32LE(bytes, 40);
  return h;
}

/**
 * Cuts a 16 kHz mono s16 WAV into `parts` pieces at the quietest 300 ms
 * near each even cut point (searched ±4 s), so a cut falls in a pause and
 * no word is split. Writes `${prefix}-N.wav` and returns them with their
 * offsets.
 */
export function splitWavAtPauses(wavPath: string, parts: number, prefix: string): WavPiece[] {
  const pcm = wavData(readFileSync(wavPath));
  const samples = new Int16Array(pcm.buffer, pcm.byteOffset, Math.floor(pcm.length / 2));
  const frames = Math.floor(samples.length / FRAME);
  const energy = new Float64Array(frames);
  for (let f = 0; f < frames; f++) {
    let e = 0;
    for (let i = f * FRAME; i < (f + 1) * FRAME; i++) e += (samples[i] ?? 0) ** 2;
    energy[f] = e;
  }
  const win = 30; // 300 ms
  const cuts: number[] = [0];
  for (let k = 1; k < parts; k++) {
    const target = Math.round((frames * k) / parts);
    let best = target;
    let bestE = Number.POSITIVE_INFINITY;
    for (let f = Math.max((cuts.at(-1) ?? 0) + win, target - 400); f <= Math.min(frames - win, target + 400); f++) {
      let e = 0;
      for (let j = f; j < f + win; j++) e += energy[j] ?? 0;
      if (e < bestE) {
        bestE = e;
        best = f + win / 2;
      }
    }
    cuts.push(best);
  }
  cuts.push(frames);
  const pieces: WavPiece[] = [];
  for (let k = 0; k < parts; k++) {
    const from = (cuts[k] ?? 0) * FRAME * 2;
    const to = k === parts - 1 ? pcm.length : (cuts[k + 1] ?? 0) * FRAME * 2;
    if (to <= from) continue;
    const path = `${prefix}-${k}.wav`;
    writeFileSync(path, Buffer.concat([wavHeader(to - from), pcm.subarray(from, to)]));
    pieces.push({ path, offset: from / 2 / RATE });
  }
  return pieces;
}
