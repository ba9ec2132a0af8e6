import { describe, expect, test } from "bun:test";
import { planLadder, widthForHeight } from "./plan-ladder.ts";
import type { ProbeResult, Rung } from "./types.ts";

const probe = (width: number | null, height: number | null, hasVideo = true): ProbeResult => ({
  durationSeconds: 3,
  width,
  height,
  hasVideo,
  hasAudio: true,
  videoCodec: hasVideo ? "h264" : null,
  audioCodec: "aac",
  formatName: "mov,mp4,m4a,3gp,3g2,mj2",
  frameRate: hasVideo ? 25 : null,
});
const r = (height: number, name = `${height}p`): Rung => ({ name, height, videoBitrateKbps: height * 2, audioBitrateKbps: 64 });
const LADDER = [r(1080), r(360), r(720)];

describe("planLadder", () => {
  test("drops rungs above the source and sorts ascending", () => {
    expect(planLadder(probe(1280, 720), LADDER).map((x) => x.name)).toEqual(["360p", "720p"]);
  });

  test("keeps every rung for a taller source", () => {
    expect(planLadder(probe(3840, 2160), LADDER).map((x) => x.height)).toEqual([360, 720, 1080]);
  });

  test("a source shorter than every rung gets one rung at its own height", () => {
    const planned = planLadder(probe(426, 240), LADDER);
    expect(planned).toEqual([{ name: "240p", height: 240, videoBitrateKbps: 720, audioBitrateKbps: 64 }]);
  });

  test("odd source heights round down to even", () => {
    expect(planLadder(probe(322, 241), LADDER)).toEqual([{ ...r(360), name: "240p", height: 240 }]);
    expect(planLadder(probe(322, 242), [r(144), r(240), r(360)]).map((x) => x.height)).toEqual([144, 240]);
  });

  test("odd rung heights become even and duplicates collapse", () => {
    expect(planLadder(probe(1280, 720), [r(361, "a"), r(360, "b")]).map((x) => [x.name, x.height])).toEqual([["b", 360]]);
  });

  test("audio-only sources get no video rungs", () => {
    expect(planLadder(probe(null, null, false), LADDER)).toEqual([]);
  });

  test("an unknown height falls back to the lowest rung", () => {
    expect(planLadder(probe(null, null), LADDER).map((x) => x.name)).toEqual(["360p"]);
  });
});

describe("widthForHeight", () => {
  test("keeps the aspect ratio with an even width", () => {
    expect(widthForHeight(probe(1280, 720), 360)).toBe(640);
    expect(widthForHeight(probe(322, 242), 144)).toBe(192);
    expect(widthForHeight(probe(322, 242), 242)).toBe(322);
    expect(widthForHeight(probe(1080, 1920), 360)).toBe(202);
  });
});
