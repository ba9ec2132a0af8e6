import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { AacFormatError, parseAudioSpecificConfig, parseFlvAudioTag, UnsupportedAudioCodecError } from "./aac.ts";
import { readFlvTags } from "./flv-reader.ts";

const FIXTURE = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");
const tags = [...readFlvTags(new Uint8Array(await Bun.file(FIXTURE).arrayBuffer()))];
const audio = tags.filter((t) => t.type === "audio").map((t) => parseFlvAudioTag(t.payload));

describe("FLV audio tags", () => {
  test("fixture: sequence header first, then raw frames; AAC-LC 44.1 kHz mono", () => {
    expect(audio[0]!.aacPacketType).toBe("sequence-header");
    expect(audio.slice(1).every((a) => a.aacPacketType === "raw")).toBe(true);
    const asc = parseAudioSpecificConfig(audio[0]!.data);
    // ffmpeg's sine source is mono.
    expect(asc).toMatchObject({ objectType: 2, sampleRate: 44100, channels: 1, codec: "mp4a.40.2", extensionSampleRate: null });
  });

  test("AudioSpecificConfig variants", () => {
    // AAC-LC 48 kHz stereo.
    expect(parseAudioSpecificConfig(new Uint8Array([0x11, 0x90]))).toMatchObject({ sampleRate: 48000, channels: 2 });
    // 7.1 (channelConfiguration 7 → 8 channels).
    expect(parseAudioSpecificConfig(new Uint8Array([0x11, 0xb8]))).toMatchObject({ channels: 8 });
    // HE-AAC explicit: AOT 5, 24 kHz core, 48 kHz extension, core AOT 2.
    const he = parseAudioSpecificConfig(new Uint8Array([0x2b, 0x11, 0x88, 0x00]));
    expect(he).toMatchObject({ objectType: 5, sampleRate: 24000, extensionSampleRate: 48000, channels: 2, codec: "mp4a.40.5" });
  });

  test("errors name the field / codec", () => {
    expect(() => parseFlvAudioTag(new Uint8Array([0x2f, 0xff]))).toThrow(UnsupportedAudioCodecError);
    expect(() => parseFlvAudioTag(new Uint8Array([0x2f, 0xff]))).toThrow(/MP3/);
    expect(() => parseFlvAudioTag(new Uint8Array([0xaf, 5]))).toThrow(/AACPacketType/);
    expect(() => parseAudioSpecificConfig(new Uint8Array([0x16, 0x90]))).toThrow(AacFormatError);
    expect(() => parseAudioSpecificConfig(new Uint8Array([0x16, 0x90]))).toThrow(/samplingFrequencyIndex/);
  });
});
