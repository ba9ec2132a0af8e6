import { describe, expect, test } from "bun:test";
import { rewriteVideoDts, TsRewriteError } from "./ts-dts-rewrite.ts";

/** One TS packet carrying the start of a video PES with PTS and DTS. */
function videoPesPacket(pts: number, dts: number): Uint8Array {
  const p = new Uint8Array(188).fill(0xff);
  p.set([0x47, 0x41, 0x00, 0x10]); // PUSI, PID 0x100, payload only
  p.set([0, 0, 1, 0xe0, 0, 0, 0x84, 0xc0, 10], 4);
  const ts = (prefix: number, t: number, o: number) => {
    p[o] = (prefix << 4) | (Math.floor(t / 2 ** 30) << 1) | 1;
    p[o + 1] = (t >>> 22) & 0xff;
    p[o + 2] = (((t >>> 15) & 0x7f) << 1) | 1;
    p[o + 3] = (t >>> 7) & 0xff;
    p[o + 4] = ((t & 0x7f) << 1) | 1;
  };
  ts(0b0011, pts, 13);
  ts(0b0001, dts, 18);
  return p;
}

function readDts(p: Uint8Array): number {
  const o = 18;
  return ((p[o]! >> 1) & 0x07) * 2 ** 30 + ((p[o + 1]! << 22) | ((p[o + 2]! >> 1) << 15) | (p[o + 3]! << 7) | (p[o + 4]! >> 1));
}

describe("rewriteVideoDts", () => {
  test("replaces each video DTS in order, leaves PTS alone", () => {
    const seg = new Uint8Array([...videoPesPacket(9000, 9000), ...videoPesPacket(12600, 10800)]);
    const queue = [0.0, 0.04];
    expect(rewriteVideoDts(seg, () => queue.shift())).toBe(2);
    expect(readDts(seg.subarray(0, 188))).toBe(0);
    expect(readDts(seg.subarray(188))).toBe(3600);
    expect([...seg.subarray(13, 18)]).toEqual([...videoPesPacket(9000, 9000).subarray(13, 18)]);
  });

  test("timestamps beyond 2^32 ticks keep their top bit", () => {
    const seg = videoPesPacket(0, 0);
    rewriteVideoDts(seg, () => (2 ** 32 + 90_000) / 90_000);
    expect(readDts(seg)).toBe(2 ** 32 + 90_000);
  });

  test("errors name the field", () => {
    expect(() => rewriteVideoDts(new Uint8Array(100), () => 0)).toThrow(TsRewriteError);
    expect(() => rewriteVideoDts(new Uint8Array(188), () => 0)).toThrow(/sync_byte/);
    expect(() => rewriteVideoDts(videoPesPacket(0, 0), () => undefined)).toThrow(/DTS/);
  });
});
