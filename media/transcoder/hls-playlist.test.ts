import { describe, expect, test } from "bun:test";
import { mergeMasterPlaylists, parseAttributes, parseMasterPlaylist, parseMediaPlaylist } from "./hls-playlist.ts";

describe("hls playlists", () => {
  test("master: variants with quoted codec lists", () => {
    const text = [
      "#EXTM3U",
      "#EXT-X-VERSION:3",
      '#EXT-X-STREAM-INF:BANDWIDTH=400400,RESOLUTION=640x360,CODECS="avc1.4d401e,mp4a.40.2"',
      "360p/index.m3u8",
      "",
      '#EXT-X-STREAM-INF:BANDWIDTH=140800,CODECS="mp4a.40.2"',
      "audio/index.m3u8",
    ].join("\n");
    expect(parseMasterPlaylist(text)).toEqual([
      { uri: "360p/index.m3u8", bandwidth: 400400, width: 640, height: 360, codecs: ["avc1.4d401e", "mp4a.40.2"] },
      { uri: "audio/index.m3u8", bandwidth: 140800, width: null, height: null, codecs: ["mp4a.40.2"] },
    ]);
  });

  test("media: segments, durations, VOD markers", () => {
    const text =
      "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n" +
      "#EXT-X-INDEPENDENT-SEGMENTS\n#EXTINF:2.000000,\nseg-00000.ts\n#EXTINF:1.000000,\nseg-00001.ts\n#EXT-X-ENDLIST\n";
    const p = parseMediaPlaylist(text);
    expect(p.segments).toEqual([
      { duration: 2, uri: "seg-00000.ts" },
      { duration: 1, uri: "seg-00001.ts" },
    ]);
    expect(p).toMatchObject({ targetDuration: 2, playlistType: "VOD", endList: true, independentSegments: true, totalDuration: 3 });
  });

  test("rejects non-playlists", () => {
    expect(() => parseMediaPlaylist("hello")).toThrow();
    expect(() => parseMasterPlaylist("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n")).toThrow();
    expect(parseAttributes('A=1,B="x,y",C=z')).toEqual({ A: "1", B: "x,y", C: "z" });
  });

  test("merging one-variant masters gives what one var_stream_map run writes", () => {
    // Files as ffmpeg 5.1 writes them, for one run per rung and for one run of the ladder.
    const v360 = '#EXT-X-STREAM-INF:BANDWIDTH=985600,RESOLUTION=640x360,CODECS="avc1.4d401e,mp4a.40.2"\n360p/index.m3u8\n\n';
    const v720 = '#EXT-X-STREAM-INF:BANDWIDTH=3220800,RESOLUTION=1280x720,CODECS="avc1.4d401f,mp4a.40.2"\n720p/index.m3u8\n\n';
    const head = "#EXTM3U\n#EXT-X-VERSION:6\n";
    expect(mergeMasterPlaylists([head + v360, head + v720])).toBe(head + v360 + v720);
    expect(mergeMasterPlaylists([head + v360])).toBe(head + v360);
    expect(mergeMasterPlaylists(["#EXTM3U\n#EXT-X-VERSION:3\n" + v360, head + v720.trimEnd()])).toBe(head + v360 + v720.trimEnd() + "\n");
    expect(() => mergeMasterPlaylists([head])).toThrow();
    expect(() => mergeMasterPlaylists([])).toThrow();
  });
});
