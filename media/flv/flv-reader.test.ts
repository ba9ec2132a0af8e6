import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FlvFormatError, parseFlvHeader, readFlvFile, readFlvTags, type FlvTag } from "./flv-reader.ts";
import { closeMediaTools, ffprobePacketCounts } from "./test-helpers.ts";

setDefaultTimeout(120_000);

const FIXTURE = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");
afterAll(closeMediaTools);
const bytes = new Uint8Array(await Bun.file(FIXTURE).arrayBuffer());

function count(tags: Iterable<FlvTag>) {
  const c = { audio: 0, video: 0, data: 0 };
  for (const t of tags) c[t.type]++;
  return c;
}

describe("readFlvTags", () => {
  test("header flags", () => {
    expect(parseFlvHeader(bytes)).toEqual({ version: 1, hasAudio: true, hasVideo: true, dataOffset: 9 });
  });

  test("tag counts match ffprobe packets (+ sequence headers, end of sequence, onMetaData)", async () => {
    const probe = await ffprobePacketCounts(FIXTURE);
    const c = count(readFlvTags(bytes));
    // ffprobe reports neither the AVC/AAC sequence headers nor ffmpeg's
    // trailing AVC end-of-sequence tag as packets.
    expect(c.video).toBe(probe.video + 2);
    expect(c.audio).toBe(probe.audio + 1);
    expect(c.data).toBe(1);
  });

  test("timestamps are non-decreasing per stream and span ~6 s", () => {
    const last = { audio: -1, video: -1, data: -1 };
    for (const t of readFlvTags(bytes)) {
      expect(t.timestamp).toBeGreaterThanOrEqual(last[t.type]);
      last[t.type] = t.timestamp;
    }
    expect(last.video).toBeGreaterThan(5800);
    expect(last.video).toBeLessThan(6100);
  });

  test("a file cut anywhere yields exactly the complete tags", () => {
    const all = [...readFlvTags(bytes)];
    // Tag i ends (body complete) at ends[i].
    const ends: number[] = [];
    for (const t of all) ends.push(t.payload.byteOffset - bytes.byteOffset + t.payload.length);
    for (const cut of [0, 2, 8, 12, 13, 20, 1000, 123_457, 400_001, bytes.length - 5, bytes.length - 1]) {
      const got = [...readFlvTags(bytes.subarray(0, cut))];
      const expected = ends.filter((e) => e <= cut).length;
      expect(got.length).toBe(expected);
    }
  });

  test("not an FLV file → FlvFormatError naming the field", () => {
    expect(() => [...readFlvTags(new TextEncoder().encode("RIFF....WAVE"))]).toThrow(FlvFormatError);
    expect(() => [...readFlvTags(new TextEncoder().encode("RIFF....WAVE"))]).toThrow(/signature/);
  });
});

describe("readFlvFile", () => {
  test("streams the same tags as readFlvTags, across small chunks", async () => {
    const expected = [...readFlvTags(bytes)];
    for (const chunkSize of [61, 4096, 1 << 20]) {
      const got: FlvTag[] = [];
      for await (const t of readFlvFile(FIXTURE, { chunkSize })) got.push(t);
      expect(got.length).toBe(expected.length);
      for (let i = 0; i < got.length; i += 37) {
        expect(got[i]!.type).toBe(expected[i]!.type);
        expect(got[i]!.timestamp).toBe(expected[i]!.timestamp);
        expect(Buffer.from(got[i]!.payload).equals(Buffer.from(expected[i]!.payload))).toBe(true);
      }
    }
  });

  test("truncated file yields only complete tags", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flv-reader-"));
    const path = join(dir, "cut.flv");
    const cut = 300_001;
    writeFileSync(path, bytes.subarray(0, cut));
    const expected = [...readFlvTags(bytes.subarray(0, cut))].length;
    let n = 0;
    for await (const _ of readFlvFile(path, { chunkSize: 5000 })) n++;
    expect(n).toBe(expected);
    expect(n).toBeGreaterThan(0);
  });
});
