import { describe, expect, test } from "bun:test";
import { parseFfprobeJson } from "./parse-ffprobe.ts";
import { TranscodeError } from "./transcode-error.ts";

const json = (o: unknown) => JSON.stringify(o);
const av = {
  streams: [
    { codec_type: "video", codec_name: "h264", width: 1280, height: 720, avg_frame_rate: "30000/1001", sample_aspect_ratio: "1:1" },
    { codec_type: "audio", codec_name: "aac", duration: "3.01", sample_rate: "48000" },
  ],
  format: { format_name: "mov,mp4,m4a,3gp,3g2,mj2", duration: "3.000000" },
};

describe("parseFfprobeJson", () => {
  test("reads an audio+video file", () => {
    const p = parseFfprobeJson(json(av));
    expect(p).toEqual({
      durationSeconds: 3,
      width: 1280,
      height: 720,
      hasVideo: true,
      hasAudio: true,
      videoCodec: "h264",
      audioCodec: "aac",
      formatName: "mov,mp4,m4a,3gp,3g2,mj2",
      frameRate: 30000 / 1001,
      audioSampleRate: 48000,
    });
  });

  test("swaps dimensions for rotated phone video and applies the pixel aspect ratio", () => {
    const rotated = { ...av, streams: [{ ...av.streams[0], side_data_list: [{ rotation: -90 }] }] };
    expect(parseFfprobeJson(json(rotated))).toMatchObject({ width: 720, height: 1280, hasAudio: false });
    const anamorphic = { ...av, streams: [{ ...av.streams[0], width: 720, height: 576, sample_aspect_ratio: "16:11" }] };
    expect(parseFfprobeJson(json(anamorphic))).toMatchObject({ width: 1047, height: 576 });
  });

  test("cover art does not make an audio file a video", () => {
    const mp3 = {
      streams: [
        { codec_type: "audio", codec_name: "mp3" },
        { codec_type: "video", codec_name: "mjpeg", width: 500, height: 500, disposition: { attached_pic: 1 } },
      ],
      format: { format_name: "mp3", duration: "10.5" },
    };
    expect(parseFfprobeJson(json(mp3))).toMatchObject({ hasVideo: false, hasAudio: true, width: null, frameRate: null });
  });

  test("falls back to stream durations", () => {
    const noFormatDuration = { ...av, format: { format_name: "matroska,webm" } };
    expect(parseFfprobeJson(json(noFormatDuration)).durationSeconds).toBe(3.01);
  });

  test("empty JSON (what ffprobe prints for garbage) is INPUT_UNSUPPORTED with the reason", () => {
    try {
      parseFfprobeJson("{\n\n}", ["/in/corrupt.mp4: Invalid data found when processing input"]);
      throw new Error("expected a throw");
    } catch (e) {
      expect(e).toBeInstanceOf(TranscodeError);
      expect((e as TranscodeError).code).toBe("INPUT_UNSUPPORTED");
      expect((e as TranscodeError).message).toContain("Invalid data found");
    }
  });

  test("unparseable output and stream-less files are INPUT_UNSUPPORTED", () => {
    expect(() => parseFfprobeJson("not json")).toThrow(TranscodeError);
    expect(() => parseFfprobeJson(json({ streams: [{ codec_type: "data" }], format: {} }))).toThrow(/no audio or video/);
  });
});
