import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFlvTags } from "./flv-reader.ts";
import { createFlvWriter, encodeFlvTag, FlvWriterError } from "./flv-writer.ts";
import { stripSetDataFrame } from "./script-data.ts";
import { closeMediaTools, ffprobePackets } from "./test-helpers.ts";

setDefaultTimeout(120_000);

const FIXTURE = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");
afterAll(closeMediaTools);
const bytes = new Uint8Array(await Bun.file(FIXTURE).arrayBuffer());
const tmp = () => mkdtempSync(join(tmpdir(), "flv-writer-"));

describe("createFlvWriter", () => {
  test("round trip: same bytes as the ffmpeg-written fixture, ffprobe sees identical packets", async () => {
    const path = join(tmp(), "out.flv");
    const w = await createFlvWriter(path, { hasAudio: true, hasVideo: true });
    for (const tag of readFlvTags(bytes)) await w.write(tag);
    await w.close();
    const out = new Uint8Array(await Bun.file(path).arrayBuffer());
    expect(w.bytesWritten).toBe(out.length);
    expect(Buffer.from(out).equals(Buffer.from(bytes))).toBe(true);
    expect(await ffprobePackets(path)).toEqual(await ffprobePackets(FIXTURE));
  });

  test("every cut of the written file reads back as whole tags; ffprobe reads a cut copy", async () => {
    const dir = tmp();
    const path = join(dir, "out.flv");
    const w = await createFlvWriter(path, { hasAudio: true, hasVideo: true, flushBytes: 10_000 });
    const tags = [...readFlvTags(bytes)];
    for (const tag of tags) await w.write(tag);
    await w.close();
    const out = new Uint8Array(await Bun.file(path).arrayBuffer());
    for (const cut of [0, 5, 13, 14, 5000, 250_001, 500_003]) {
      const got = [...readFlvTags(out.subarray(0, cut))];
      for (let i = 0; i < got.length; i++) {
        expect(got[i]!.timestamp).toBe(tags[i]!.timestamp);
        expect(got[i]!.payload.length).toBe(tags[i]!.payload.length);
      }
    }
    const cutPath = join(dir, "cut.flv");
    writeFileSync(cutPath, out.subarray(0, 500_003));
    const packets = await ffprobePackets(cutPath);
    expect(packets.length).toBeGreaterThan(100);
  });

  test("tags reach the file within the flush interval without an explicit flush", async () => {
    const path = join(tmp(), "live.flv");
    const w = await createFlvWriter(path, { hasAudio: true, hasVideo: true, flushIntervalMs: 100 });
    expect(statSync(path).size).toBe(13); // header at once
    const first = readFlvTags(bytes).next().value!;
    await w.write(first);
    await Bun.sleep(200);
    expect(statSync(path).size).toBe(13 + encodeFlvTag(first).length);
    await w.close();
    await expect(w.write(first)).rejects.toThrow(FlvWriterError);
  });

  test("backpressure: write() waits once over the high-water mark and all tags land in order", async () => {
    const path = join(tmp(), "bp.flv");
    const w = await createFlvWriter(path, { hasAudio: true, hasVideo: true, highWaterMark: 50_000, flushBytes: 20_000 });
    const tags = [...readFlvTags(bytes)];
    await Promise.all(tags.map((t) => w.write(t))); // no awaiting between writes
    await w.close();
    const back = [...readFlvTags(new Uint8Array(await Bun.file(path).arrayBuffer()))];
    expect(back.map((t) => t.timestamp)).toEqual(tags.map((t) => t.timestamp));
  });

  test("a recording killed with SIGKILL mid-stream is a readable prefix", async () => {
    const path = join(tmp(), "killed.flv");
    const script = `
      import { readFlvTags } from ${JSON.stringify(join(import.meta.dir, "flv-reader.ts"))};
      import { createFlvWriter } from ${JSON.stringify(join(import.meta.dir, "flv-writer.ts"))};
      const bytes = new Uint8Array(await Bun.file(${JSON.stringify(FIXTURE)}).arrayBuffer());
      const w = await createFlvWriter(${JSON.stringify(path)}, { hasAudio: true, hasVideo: true });
      const t0 = performance.now();
      for (const tag of readFlvTags(bytes)) {
        const wait = tag.timestamp / 4 - (performance.now() - t0); // 4x real time
        if (wait > 0) await Bun.sleep(wait);
        await w.write(tag);
      }
      await w.close();
    `;
    const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "ignore", stderr: "inherit" });
    // Kill once part of the stream is on disk (polling, not a fixed sleep: start-up time varies under load).
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && (!existsSync(path) || statSync(path).size < 200_000)) await Bun.sleep(20);
    proc.kill("SIGKILL");
    await proc.exited;
    const out = new Uint8Array(await Bun.file(path).arrayBuffer());
    const got = [...readFlvTags(out)];
    const expected = [...readFlvTags(bytes)];
    expect(got.length).toBeGreaterThan(10);
    expect(got.length).toBeLessThan(expected.length);
    for (let i = 0; i < got.length; i++) {
      expect(Buffer.from(got[i]!.payload).equals(Buffer.from(expected[i]!.payload))).toBe(true);
    }
    expect((await ffprobePackets(path)).length).toBeGreaterThan(0);
  });
});

describe("stripSetDataFrame", () => {
  test("drops the RTMP @setDataFrame wrapper, leaves onMetaData bodies alone", () => {
    const onMeta = readFlvTags(bytes).next().value!.payload;
    const setDataFrame = new Uint8Array([0x02, 0x00, 0x0d, ...new TextEncoder().encode("@setDataFrame"), ...onMeta]);
    expect(Buffer.from(stripSetDataFrame(setDataFrame)).equals(Buffer.from(onMeta))).toBe(true);
    expect(stripSetDataFrame(onMeta)).toBe(onMeta);
  });
});
