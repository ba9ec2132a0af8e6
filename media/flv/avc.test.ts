import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { AvcFormatError, avcCodecString, containsIdr, parseAvcDecoderConfig, parseFlvVideoTag, splitAvccNalUnits, UnsupportedVideoCodecError } from "./avc.ts";
import { readFlvTags } from "./flv-reader.ts";
import { parseSps } from "./sps.ts";
import { closeMediaTools, ffprobePackets } from "./test-helpers.ts";

setDefaultTimeout(120_000);

const FIXTURE = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");
afterAll(closeMediaTools);
const tags = [...readFlvTags(new Uint8Array(await Bun.file(FIXTURE).arrayBuffer()))];
const video = tags.filter((t) => t.type === "video").map((t) => ({ ts: t.timestamp, ...parseFlvVideoTag(t.payload) }));

describe("FLV video tags of the 360p fixture", () => {
  test("one sequence header first, NALUs, then end of sequence", () => {
    expect(video[0]!.avcPacketType).toBe("sequence-header");
    expect(video.at(-1)!.avcPacketType).toBe("end-of-sequence");
    expect(video.filter((v) => v.avcPacketType === "nalu").length).toBe(video.length - 2);
  });

  test("avcC → SPS/PPS → 640x360 Main", () => {
    const config = parseAvcDecoderConfig(video[0]!.data);
    expect(config.nalLengthSize).toBe(4);
    expect(config.sps.length).toBe(1);
    expect(config.pps.length).toBe(1);
    expect(avcCodecString(config)).toBe("avc1.4d401e");
    const sps = parseSps(config.sps[0]!);
    expect(sps).toMatchObject({ width: 640, height: 360, codedWidth: 640, codedHeight: 368, profile: "Main", level: "3.0" });
  });

  test("keyframe every second, each an IDR; pts = dts + composition time as ffprobe says", async () => {
    const config = parseAvcDecoderConfig(video[0]!.data);
    const nalus = video.filter((v) => v.avcPacketType === "nalu");
    const keys = nalus.filter((v) => v.isKeyframe);
    expect(keys.map((k) => k.ts)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
    for (const v of nalus) expect(containsIdr(v.data, config.nalLengthSize)).toBe(v.isKeyframe);
    const probe = (await ffprobePackets(FIXTURE)).filter((p) => p.codec_type === "video");
    expect(nalus.map((v) => [v.ts, v.ts + v.compositionTimeMs])).toEqual(probe.map((p) => [p.dts, p.pts]));
    expect(nalus.some((v) => v.compositionTimeMs > 0)).toBe(true); // B-frames present
    for (const v of nalus.slice(0, 5)) expect(splitAvccNalUnits(v.data, 4).length).toBeGreaterThan(0);
  });

  test("negative composition time is sign-extended", () => {
    expect(parseFlvVideoTag(new Uint8Array([0x27, 1, 0xff, 0xff, 0xd8])).compositionTimeMs).toBe(-40);
  });

  test("errors name the field / codec", () => {
    expect(() => parseFlvVideoTag(new Uint8Array([0x1c, 0, 0, 0, 0]))).toThrow(UnsupportedVideoCodecError);
    expect(() => parseFlvVideoTag(new Uint8Array([0x1c, 0, 0, 0, 0]))).toThrow(/HEVC/);
    expect(() => parseFlvVideoTag(new Uint8Array([0x17, 7, 0, 0, 0]))).toThrow(/AVCPacketType/);
    expect(() => parseAvcDecoderConfig(new Uint8Array([2, 0x4d, 0, 0x1e, 0xff, 0xe1, 0]))).toThrow(AvcFormatError);
    expect(() => parseAvcDecoderConfig(new Uint8Array([2, 0x4d, 0, 0x1e, 0xff, 0xe1, 0]))).toThrow(/configurationVersion/);
    expect(() => parseAvcDecoderConfig(video[0]!.data.subarray(0, 12))).toThrow(/sequenceParameterSetNALUnit/);
  });
});
