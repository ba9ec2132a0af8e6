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
    expect(videoFailure(new Error("x".repeat(5000))).message.length).toBeLessThanOrEqual(500);
    expect(videoFailure(undefined)).toEqual({ code: "TRANSCODE_FAILED", message: "Transcoding failed." });
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
