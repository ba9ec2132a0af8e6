import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFlvFile } from "./flv-reader.ts";
import { createWebrtcFitCheck, type WebrtcFit } from "./webrtc-fit.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/** Real libx264 encodes (Debian's ffmpeg) as an RTMP encoder sends them, read tag by tag. */
const hasFfmpeg = !!Bun.which("ffmpeg");
const dir = await mkdtemp(join(tmpdir(), "webrtc-fit-"));
afterAll(() => rm(dir, { recursive: true, force: true }));

async function verdictOf(name: string, x264: string[]): Promise<{ first: WebrtcFit; last: WebrtcFit }> {
  const path = join(dir, `${name}.flv`);
  const ff = Bun.spawn(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "1", "-c:v", "libx264", ...x264, "-f", "flv", path], { stderr: "pipe" });
  expect(await ff.exited).toBe(0);
  const check = createWebrtcFitCheck();
  let first: WebrtcFit | undefined;
  for await (const tag of readFlvFile(path)) {
    check.observe(tag);
    // What the relay sees when it starts at the first keyframe.
    if (!first && check.verdict().decided) first = check.verdict();
  }
  return { first: first!, last: check.verdict() };
}

describe.skipIf(!hasFfmpeg)("WebRTC fit of an RTMP encoder's H.264", () => {
  test("the README's ffmpeg flags (libx264 default: High, B-frames) and OBS's defaults (High, 2 B-frames, 2 s GOP) need a re-encode, known at the first picture", async () => {
    for (const [name, flags] of [
      ["readme", ["-preset", "veryfast", "-g", "60", "-pix_fmt", "yuv420p"]],
      ["obs", ["-preset", "veryfast", "-profile:v", "high", "-bf", "2", "-g", "60", "-pix_fmt", "yuv420p"]],
    ] as const) {
      const { first, last } = await verdictOf(name, [...flags]);
      expect(first).toMatchObject({ decided: true, unfit: { reason: "B_FRAMES" } });
      expect(last.unfit?.reason).toBe("B_FRAMES");
    }
  }, 60_000);

  test("High without B-frames (zerolatency) and baseline go as is", async () => {
    for (const [name, flags] of [
      ["zerolatency", ["-preset", "veryfast", "-tune", "zerolatency", "-g", "30", "-pix_fmt", "yuv420p"]],
      ["high-bf0", ["-preset", "veryfast", "-profile:v", "high", "-bf", "0", "-pix_fmt", "yuv420p"]],
      ["baseline", ["-preset", "veryfast", "-profile:v", "baseline", "-pix_fmt", "yuv420p"]],
    ] as const) {
      const { first, last } = await verdictOf(name, [...flags]);
      expect(first).toEqual({ decided: true, unfit: null });
      expect(last).toEqual({ decided: true, unfit: null });
    }
  }, 60_000);

  test("10-bit and interlaced H.264 need a re-encode even without B-frames", async () => {
    expect((await verdictOf("high10", ["-preset", "veryfast", "-bf", "0", "-pix_fmt", "yuv420p10le"])).last.unfit?.reason).toBe("FORMAT");
    expect((await verdictOf("interlaced", ["-preset", "veryfast", "-bf", "0", "-flags", "+ildct+ilme", "-x264opts", "tff=1", "-pix_fmt", "yuv420p"])).last.unfit?.reason).toBe("INTERLACED");
  }, 60_000);

  test("a new encoder configuration (another sequence header) starts over; nothing is decided before a picture", () => {
    const check = createWebrtcFitCheck();
    expect(check.verdict()).toEqual({ decided: false, unfit: null });
    // Not H.264 / too short: ignored.
    check.observe({ type: "video", timestamp: 0, payload: new Uint8Array([0x12, 0, 0]) });
    check.observe({ type: "audio", timestamp: 0, payload: new Uint8Array([0xaf, 1, 0, 0, 0]) });
    expect(check.verdict().decided).toBe(false);
    // A picture with composition offset 67 ms.
    check.observe({ type: "video", timestamp: 0, payload: new Uint8Array([0x17, 1, 0, 0, 67, 0, 0, 0, 1, 0x65]) });
    expect(check.verdict().unfit?.reason).toBe("B_FRAMES");
    // A (minimal, unparsable) new sequence header resets what was seen.
    check.observe({ type: "video", timestamp: 40, payload: new Uint8Array([0x17, 0, 0, 0, 0, 1, 0x64, 0, 0x1f, 0xff, 0xe0, 0]) });
    expect(check.verdict()).toEqual({ decided: false, unfit: null });
    check.observe({ type: "video", timestamp: 80, payload: new Uint8Array([0x17, 1, 0, 0, 0, 0, 0, 0, 1, 0x65]) });
    expect(check.verdict()).toEqual({ decided: true, unfit: null });
  });
});
