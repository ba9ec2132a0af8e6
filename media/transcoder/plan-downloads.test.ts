import { describe, expect, test } from "bun:test";
import { planDownloads } from "./plan-downloads.ts";
import type { Rung } from "./types.ts";

const r = (height: number): Rung => ({ name: `${height}p`, height, videoBitrateKbps: 1, audioBitrateKbps: 1 });
const LADDER = [r(360), r(720), r(1080)];
const produced = [
  { name: "360p", height: 360 },
  { name: "720p", height: 720 },
];

describe("planDownloads", () => {
  test("matches produced rungs by name", () => {
    const { planned, ignored } = planDownloads([{ rung: "360p", format: "mkv" }], LADDER, produced);
    expect(planned).toEqual([{ rendition: "360p", format: "mkv", requested: "360p" }]);
    expect(ignored).toEqual([]);
  });

  test("a rung dropped for a small source falls back to the tallest one below it", () => {
    const { planned } = planDownloads([{ rung: "1080p", format: "mp4-encrypted" }], LADDER, produced);
    expect(planned).toEqual([{ rendition: "720p", format: "mp4-encrypted", requested: "1080p" }]);
  });

  test("names outside the ladder and second requests for one rendition are ignored", () => {
    const { planned, ignored } = planDownloads(
      [
        { rung: "720p", format: "mkv" },
        { rung: "1080p", format: "mp4-encrypted" },
        { rung: "4k", format: "mkv" },
      ],
      LADDER,
      produced,
    );
    expect(planned.map((p) => p.rendition)).toEqual(["720p"]);
    expect(ignored.map((i) => i.rung)).toEqual(["1080p", "4k"]);
  });

  test("an audio-only job puts the first request on the audio rendition", () => {
    const { planned } = planDownloads(
      [
        { rung: "720p", format: "mp4-encrypted" },
        { rung: "360p", format: "mkv" },
      ],
      LADDER,
      [{ name: "audio", height: 0 }],
    );
    expect(planned).toEqual([{ rendition: "audio", format: "mp4-encrypted", requested: "720p" }]);
  });
});
