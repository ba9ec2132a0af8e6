import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { TranscodeError } from "../../media/transcoder/index.ts";
import { PermanentWorkError } from "../work/work-runner.ts";
import { asWorkError, sanitizeFailureMessage, videoFailure } from "./video-failure.ts";

setDefaultTimeout(120_000);

describe("failure messages carry no server paths", () => {
  test("absolute paths become base names; URLs and ratios stay", () => {
    const roots = ["/srv/data"];
    expect(sanitizeFailureMessage("input is not supported media: /srv/data/work/vid_1/source.mp4: Invalid data found when processing input", roots)).toBe(
      "input is not supported media: source.mp4: Invalid data found when processing input",
    );
    expect(sanitizeFailureMessage("Error opening output file '/srv/data/media/ab/hls/360p/index.m3u8'.", roots)).toBe("Error opening output file 'index.m3u8'.");
    expect(sanitizeFailureMessage("cannot open (/var/tmp/x/y.ts), giving up")).toBe("cannot open (y.ts), giving up");
    expect(sanitizeFailureMessage("Cannot fetch the source: https://cdn.example.com/a/b.mp4 answered 503")).toBe("Cannot fetch the source: https://cdn.example.com/a/b.mp4 answered 503");
    expect(sanitizeFailureMessage("aspect 16/9 at 30000/1001 fps")).toBe("aspect 16/9 at 30000/1001 fps");
  });

  test("codes come from the error; messages are bounded", () => {
    expect(videoFailure(new PermanentWorkError("SOURCE_NOT_FOUND", "The source answered HTTP 404."))).toEqual({ code: "SOURCE_NOT_FOUND", message: "The source answered HTTP 404." });
    expect(videoFailure(new TranscodeError("TIMEOUT", "transcode exceeded 5 ms")).code).toBe("TRANSCODE_TIMEOUT");
    expect(videoFailure(new PermanentWorkError("SOURCE_FETCH_FAILED", "x".repeat(5000))).message.length).toBeLessThanOrEqual(500);
    expect(videoFailure(undefined)).toEqual({ code: "TRANSCODE_FAILED", message: "Transcoding failed because of an error in the service." });
  });
});

/** Issue 23 (17): what ffmpeg and ffprobe really print, as the transcoder reports it. */
describe("failure messages are in the user's terms: no tool output", () => {
  const TOOL_WORDS = /0x[0-9a-f]{4,}|\[[\w,]+ @|mov,mp4|moov|ffmpeg|ffprobe|exit \d|libx264|-\w+_\w+/i;

  test("a demuxer's complaint with its memory address becomes what is wrong with the source", () => {
    const raw = new TranscodeError("INPUT_UNSUPPORTED", "input is not supported media: [mov,mp4,m4a,3gp,3g2,mj2 @ 0x55da1124e180] moov atom not found", [
      "[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55da1124e180] moov atom not found",
    ]);
    const f = videoFailure(raw);
    expect(f).toEqual({ code: "INPUT_UNSUPPORTED", message: "The source is not a video or audio file this service can read." });
    // As the handler throws it: a permanent failure in the same words, the tool's error kept as the cause (for the log).
    const work = asWorkError(raw) as PermanentWorkError;
    expect(work).toBeInstanceOf(PermanentWorkError);
    expect(work.message).toBe(f.message);
    expect(work.cause).toBe(raw);
  });

  test("every transcoder code and an unexpected error read without tool output", () => {
    const cases: TranscodeError[] = [
      new TranscodeError("INPUT_UNSUPPORTED", "input is empty: /srv/data/work/vid_1/source.mp4"),
      new TranscodeError("INPUT_UNSUPPORTED", "HLS encode of 360p: the input's streams cannot be decoded (Decoder (codec av1) not found for input stream #0:0)"),
      new TranscodeError("FFMPEG_FAILED", "HLS encode of 720p failed (exit 1): [libx264 @ 0x5581aa0] height not divisible by 2 (1280x721)"),
      new TranscodeError("TIMEOUT", "transcode exceeded 1800000 ms"),
      new TranscodeError("CANCELLED", "transcode was cancelled"),
      new TranscodeError("INVALID_JOB", 'bad rung name: "x y"'),
      new TranscodeError("PACKAGER_UNAVAILABLE", "no executable binary for sunos-x64"),
      new TranscodeError("PACKAGING_FAILED", "Shaka Packager failed (exit 1): E0101 mp4_media_parser.cc:123] bad box"),
    ];
    for (const err of cases) {
      const { message } = videoFailure(err, ["/srv/data"]);
      expect(message).not.toMatch(TOOL_WORDS);
      expect(message).not.toContain(err.message);
      expect(message).toEndWith(".");
    }
    expect(videoFailure(cases[0]!).message).toBe("The source file is empty.");
    expect(videoFailure(cases[1]!).message).toContain("cannot decode");
    const internal = videoFailure(new Error("SQLITE_BUSY: database is locked at 0x7ffd"));
    expect(internal).toEqual({ code: "TRANSCODE_FAILED", message: "Transcoding failed because of an error in the service." });
  });

  test("DRM packaging: a missing packager fails at once, a packaging failure is retried; both with their own code", () => {
    const missing = asWorkError(new TranscodeError("PACKAGER_UNAVAILABLE", "no executable binary for sunos-x64"));
    expect(missing).toBeInstanceOf(PermanentWorkError);
    expect(videoFailure(missing).code).toBe("DRM_PACKAGER_UNAVAILABLE");
    const failed = new TranscodeError("PACKAGING_FAILED", "packager exited 1");
    expect(asWorkError(failed)).toBe(failed);
    expect(videoFailure(failed).code).toBe("DRM_PACKAGING_FAILED");
  });
});
