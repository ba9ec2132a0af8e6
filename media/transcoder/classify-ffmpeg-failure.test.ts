import { describe, expect, test } from "bun:test";
import { classifyFfmpegFailure } from "./classify-ffmpeg-failure.ts";

const run = (stderrTail: string[]) => ({ exitCode: 1, stdout: "", stderrTail });

describe("classifyFfmpegFailure", () => {
  test("undecodable streams are the input’s fault", () => {
    // As logged by the wasm core for an AV1 file.
    const e = classifyFfmpegFailure(
      run([
        "[av1 @ 0xdf7df0] Failed to get pixel format.",
        "Error while decoding stream #0:0: Invalid data found when processing input",
        "Cannot determine format of input stream 0:0 after EOF",
        "Error marking filters as finished",
        "Aborted()",
      ]),
      "HLS encode",
    );
    expect(e.code).toBe("INPUT_UNSUPPORTED");
    expect(e.message).toContain("Failed to get pixel format");
  });

  test("anything else is FFMPEG_FAILED with the last meaningful line", () => {
    const e = classifyFfmpegFailure(run(["[libx264 @ 0x1] Error setting preset/tune nope/(null).", "    Last message repeated 1 times", "Aborted()"]), "HLS encode");
    expect(e.code).toBe("FFMPEG_FAILED");
    expect(e.message).toBe("HLS encode failed (exit 1): [libx264 @ 0x1] Error setting preset/tune nope/(null).");
  });
});
