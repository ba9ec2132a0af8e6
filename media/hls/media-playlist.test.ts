import { describe, expect, test } from "bun:test";
import { parseMediaPlaylist, PlaylistParseError, withTargetDuration } from "./media-playlist.ts";

const LIVE = `#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:2
#EXT-X-MEDIA-SEQUENCE:7
#EXT-X-INDEPENDENT-SEGMENTS

#EXTINF:2,
segment-8.ts
#EXTINF:4.5,
segment-9.ts
`;

describe("media playlist", () => {
  test("parses sequence numbers, durations, end list", () => {
    const pl = parseMediaPlaylist(LIVE);
    expect(pl).toMatchObject({ version: 3, targetDuration: 2, mediaSequence: 7, endList: false, map: null });
    expect(pl.segments).toEqual([
      { uri: "segment-8.ts", duration: 2, sequence: 7 },
      { uri: "segment-9.ts", duration: 4.5, sequence: 8 },
    ]);
    expect(parseMediaPlaylist(`${LIVE}\n#EXT-X-ENDLIST\n`).endList).toBe(true);
  });

  test("rewrites the target duration line only", () => {
    const fixed = withTargetDuration(LIVE, 5);
    expect(parseMediaPlaylist(fixed).targetDuration).toBe(5);
    expect(fixed.replace("TARGETDURATION:5", "TARGETDURATION:2")).toBe(LIVE);
  });

  test("errors name the tag", () => {
    expect(() => parseMediaPlaylist("segment-1.ts\n")).toThrow(PlaylistParseError);
    expect(() => parseMediaPlaylist("#EXTM3U\nsegment-1.ts\n")).toThrow(/#EXTINF/);
  });
});
