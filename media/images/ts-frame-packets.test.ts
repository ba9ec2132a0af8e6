import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipedStillArgs, stillArgs, type StillSpec } from "./image-args.ts";
import { FRAME_AT_SECONDS, framePackets } from "./ts-frame-packets.ts";
import { createWarmFfmpeg, type WarmFfmpeg } from "./warm-ffmpeg.ts";

// Runs ffmpeg: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * The piped still (issue 27, first thumbnail) must be the very image the whole-segment cut makes: the same
 * decoded frame, the same filters and encoder, so the same bytes. The segment is made as the service's HLS
 * rungs are (x264 veryfast: B-frames, some non-reference; one keyframe per 4 s segment; AAC beside it), and the
 * second segment is used, so its timestamps do not start at 0.
 */

let dir: string;
let segment: string;
let warm: WarmFfmpeg;
const still: Omit<StillSpec, "offset"> = { kind: "thumbnail", format: "jpg", width: null, height: null, fitMode: "preserve" };

function ffmpeg(args: string[]) {
  const r = Bun.spawnSync(["ffmpeg", ...args]);
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ts-frame-"));
  ffmpeg([
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", "testsrc2=duration=8:size=320x180:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:duration=8"],
    ...["-c:v", "libx264", "-preset", "veryfast", "-g", "120", "-keyint_min", "120", "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-c:a", "aac"],
    ...["-f", "hls", "-hls_time", "4", "-hls_playlist_type", "vod", "-hls_segment_filename", join(dir, "seg%d.ts"), join(dir, "index.m3u8")],
  ]);
  segment = join(dir, "seg1.ts");
  warm = createWarmFfmpeg({ idleMs: 10_000 });
});

afterAll(() => {
  warm?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The whole segment decoded from its start, frames before `offset` dropped: how every still was cut before. */
function wholeSegment(offset: number, spec: Omit<StillSpec, "offset"> = still): Uint8Array {
  const out = join(dir, `whole-${offset}.${spec.format}`);
  ffmpeg(stillArgs(segment, out, { ...spec, offset }));
  return new Uint8Array(readFileSync(out));
}

describe("framePackets + a warm ffmpeg", () => {
  // On a keyframe, on frame boundaries, between frames, on a non-reference B-frame's time, near the end.
  for (const offset of [0, 1, 1.7, 2.017, 3.9]) {
    test(`offset ${offset}: the same JPEG as the whole segment's cut, from fewer packets`, async () => {
      const bytes = new Uint8Array(readFileSync(segment));
      const packets = framePackets(bytes, offset);
      expect(packets).not.toBeNull();
      expect(packets!.length).toBeLessThan(bytes.length);
      const image = await warm.run(pipedStillArgs(still, FRAME_AT_SECONDS), packets!, AbortSignal.timeout(60_000)).output;
      expect(Buffer.from(image).equals(Buffer.from(wholeSegment(offset)))).toBe(true);
    });
  }

  test("a sized WebP crop is the same image too; a frame in the middle keeps about half the packets or fewer", async () => {
    const spec: Omit<StillSpec, "offset"> = { kind: "thumbnail", format: "webp", width: 100, height: 100, fitMode: "crop" };
    const bytes = new Uint8Array(readFileSync(segment));
    const packets = framePackets(bytes, 2.5)!;
    expect(packets.length).toBeLessThan(bytes.length * 0.6);
    const image = await warm.run(pipedStillArgs(spec, FRAME_AT_SECONDS), packets, AbortSignal.timeout(60_000)).output;
    expect(Buffer.from(image).equals(Buffer.from(wholeSegment(2.5, spec)))).toBe(true);
  });

  test("not handled (the caller cuts the whole segment): not MPEG-TS, no frame at or after the offset", () => {
    expect(framePackets(new TextEncoder().encode("#EXTM3U\n"), 0)).toBeNull();
    expect(framePackets(new Uint8Array(188 * 3), 0)).toBeNull();
    expect(framePackets(new Uint8Array(readFileSync(segment)), 4.5)).toBeNull();
  });
});
