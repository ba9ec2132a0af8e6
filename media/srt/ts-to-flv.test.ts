import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FlvTag } from "../flv/flv-tag.ts";
import { probeFlvTags } from "../flv/flv-probe.ts";
import { MpegTsDemuxer } from "./mpegts-demuxer.ts";
import { parseStreamId } from "./stream-id.ts";
import { TsToFlv } from "./ts-to-flv.ts";

setDefaultTimeout(120_000);

/** The fixture clip as MPEG-TS, the way an SRT caller sends it (ffmpeg -c copy -f mpegts). */
async function fixtureTs(): Promise<Uint8Array> {
  const dir = await mkdtemp(join(tmpdir(), "ts-"));
  try {
    const out = join(dir, "a.ts");
    const p = Bun.spawn(["ffmpeg", "-v", "error", "-i", "fixtures/av-360p-2s.mp4", "-c", "copy", "-f", "mpegts", out], { stderr: "pipe" });
    if ((await p.exited) !== 0) throw new Error(await new Response(p.stderr).text());
    return new Uint8Array(await Bun.file(out).arrayBuffer());
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function demux(ts: Uint8Array, chunk: number): FlvTag[] {
  const d = new MpegTsDemuxer();
  const c = new TsToFlv();
  const tags: FlvTag[] = [];
  for (let o = 0; o < ts.length; o += chunk) for (const p of d.push(ts.subarray(o, o + chunk))) tags.push(...c.push(p));
  for (const p of d.flush()) tags.push(...c.push(p));
  return tags;
}

describe("MPEG-TS → FLV tags", () => {
  test("ffmpeg's TS of the fixture becomes a decodable H.264/AAC feed with its duration, however it is chunked", async () => {
    const ts = await fixtureTs();
    for (const chunk of [1316, 777, ts.length]) {
      const tags = demux(ts, chunk);
      // First an AVC sequence header, then a keyframe; audio only after video started.
      expect(tags[0]!.type).toBe("video");
      expect(tags[0]!.payload.subarray(0, 2)).toEqual(Uint8Array.of(0x17, 0));
      expect(tags[1]!.payload.subarray(0, 2)).toEqual(Uint8Array.of(0x17, 1));
      const probe = await probeFlvTags(tags);
      expect(probe).toMatchObject({ hasVideo: true, hasAudio: true, width: 640, height: 360, audioCodec: expect.stringMatching(/^mp4a\.40/) });
      expect(probe.videoCodec).toMatch(/^avc1\./);
      expect(probe.durationSeconds).toBeGreaterThan(1.8);
      expect(probe.durationSeconds).toBeLessThan(2.3);
      // 2 s at 25 fps: every frame of the clip (ffprobe counts 50).
      expect(tags.filter((t) => t.type === "video" && t.payload[1] === 1).length).toBe(50);
      for (let i = 1; i < tags.length; i++) if (tags[i]!.type === tags[i - 1]!.type) expect(tags[i]!.timestamp).toBeGreaterThanOrEqual(tags[i - 1]!.timestamp);
    }
  });

  test("garbage before, inside and instead of TS never throws and the stream after it still decodes", async () => {
    const ts = await fixtureTs();
    const junk = crypto.getRandomValues(new Uint8Array(5000));
    const mixed = new Uint8Array(junk.length + ts.length);
    mixed.set(junk);
    mixed.set(ts, junk.length);
    const tags = demux(mixed, 1316);
    expect((await probeFlvTags(tags)).width).toBe(640);
    // Only garbage (with sync bytes sprinkled in): no tags, no throw.
    const noise = crypto.getRandomValues(new Uint8Array(200_000));
    for (let i = 0; i < noise.length; i += 188) noise[i] = 0x47;
    expect(demux(noise, 1316)).toEqual([]);
  });

  test("a PES larger than the cap is dropped, not buffered", () => {
    const d = new MpegTsDemuxer(10_000);
    const c = new TsToFlv();
    // PAT → PMT 0x100 → video 0x101, then one endless video PES.
    const pkt = (pid: number, pusi: boolean, payload: number[]) => {
      const p = new Uint8Array(188).fill(0xff);
      p.set([0x47, (pusi ? 0x40 : 0) | (pid >> 8), pid & 0xff, 0x10]);
      p.set(payload, 4);
      return p;
    };
    d.push(pkt(0, true, [0, 0x00, 0xb0, 13, 0, 1, 0xc1, 0, 0, 0, 1, 0xe1, 0x00, 0, 0, 0, 0]));
    d.push(pkt(0x100, true, [0, 0x02, 0xb0, 18, 0, 1, 0xc1, 0, 0, 0xe1, 0x01, 0xf0, 0, 0x1b, 0xe1, 0x01, 0xf0, 0, 0, 0, 0, 0]));
    d.push(pkt(0x101, true, [0, 0, 1, 0xe0, 0, 0, 0x80, 0x80, 5, 0x21, 0, 1, 0, 1]));
    for (let i = 0; i < 200; i++) expect(d.push(pkt(0x101, false, [])).flatMap((p) => c.push(p))).toEqual([]);
    expect(d.stats.dropped).toBe(1);
  });
});

describe("SRT stream ids", () => {
  test("publish:KEY and the access-control form give the key; others none", () => {
    expect(parseStreamId("publish:abcXYZ09")).toEqual({ mode: "publish", key: "abcXYZ09" });
    expect(parseStreamId("#!::r=abc,m=publish")).toEqual({ mode: "publish", key: "abc" });
    expect(parseStreamId("#!::r=abc")).toEqual({ mode: "request", key: "abc" });
    expect(parseStreamId("")).toEqual({ mode: null, key: "" });
    expect(parseStreamId("publish:../../etc")).toEqual({ mode: null, key: "" });
  });
});
