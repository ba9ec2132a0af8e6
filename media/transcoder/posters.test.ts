import { describe, expect, test } from "bun:test";
import { buildJobRuns, type EncodePlan } from "./build-ffmpeg-args.ts";
import { buildStoryboardVtt, planPosters } from "./posters.ts";
import type { ProbeResult } from "./types.ts";

const probe = (durationSeconds: number | null, width = 1280, height = 720, hasVideo = true): ProbeResult => ({
  durationSeconds,
  width,
  height,
  hasVideo,
  hasAudio: true,
  videoCodec: "h264",
  audioCodec: "aac",
  formatName: "mp4",
  frameRate: 30,
});

describe("planPosters", () => {
  test("30 s 720p: thumbnail at 3 s, 1280x720; one 160x90 tile a second, 10 x 3", () => {
    expect(planPosters(probe(30))).toEqual({ thumbnailAt: 3, thumbnailWidth: 1280, thumbnailHeight: 720, interval: 1, tiles: 30, columns: 10, rows: 3, tileWidth: 160, tileHeight: 90 });
  });
  test("an hour: at most 100 tiles (one every 36 s); a 4K source's thumbnail is capped at 1280", () => {
    expect(planPosters(probe(3600, 3840, 2160))).toMatchObject({ interval: 36, tiles: 100, columns: 10, rows: 10, thumbnailWidth: 1280, thumbnailHeight: 720 });
  });
  test("a short odd-sized source: even sizes, aspect kept, one row", () => {
    expect(planPosters(probe(2, 322, 242))).toMatchObject({ thumbnailWidth: 322, thumbnailHeight: 242, tileHeight: 120, tiles: 2, columns: 2, rows: 1 });
  });
  test("nothing without video or duration", () => {
    expect(planPosters(probe(30, 0, 0, false))).toBeNull();
    expect(planPosters(probe(null))).toBeNull();
  });
});

describe("buildStoryboardVtt", () => {
  test("cues back to back from 0 to the measured duration, each at its tile", () => {
    const plan = planPosters(probe(12.5))!;
    const vtt = buildStoryboardVtt(plan, 12.4);
    const cues = vtt.split("\n\n").slice(1).filter(Boolean);
    expect(vtt.startsWith("WEBVTT\n")).toBe(true);
    expect(cues).toHaveLength(13);
    expect(cues[0]).toBe("00:00:00.000 --> 00:00:01.000\nsprite.jpg#xywh=0,0,160,90");
    expect(cues[11]).toBe("00:00:11.000 --> 00:00:12.000\nsprite.jpg#xywh=160,90,160,90");
    expect(cues[12]!.trim()).toBe("00:00:12.000 --> 00:00:12.400\nsprite.jpg#xywh=320,90,160,90");
  });
});

describe("buildJobRuns with posters", () => {
  test("only the named rendition's run writes the images, named before the rung's own output", () => {
    const posters = planPosters(probe(30))!;
    const plan: EncodePlan = {
      renditions: [
        { name: "360p", width: 640, height: 360, videoBitrateKbps: 800, audioBitrateKbps: 96 },
        { name: "720p", width: 1280, height: 720, videoBitrateKbps: 2500, audioBitrateKbps: 128 },
      ],
      hasVideo: true,
      hasAudio: true,
      segmentSeconds: 4,
      frameRate: 30,
      preset: "veryfast",
      posters: { plan: posters, rendition: "360p" },
    };
    const [hls] = buildJobRuns(plan, [], { input: "/in/a.mp4", outDir: "/out" });
    const [low, high] = hls!.runs.map((r) => r.args);
    expect(high!.join(" ")).not.toContain("thumbnail.jpg");
    const graph = low![low!.indexOf("-filter_complex") + 1]!;
    expect(graph).toContain("split=3");
    expect(graph).toContain("trim=start=3,trim=end_frame=1,scale=1280:720");
    expect(graph).toContain("fps=1/1,scale=160:90,setsar=1,tile=10x3");
    const thumb = low!.indexOf("/out/thumbnail.jpg");
    const sprite = low!.indexOf("/out/sprite.jpg");
    expect(thumb).toBeGreaterThan(0);
    expect(sprite).toBeGreaterThan(thumb);
    expect(low!.indexOf("[v0]")).toBeGreaterThan(sprite);
    expect(low!.slice(0, sprite)).toContain("-huffman");
  });
});
