import { describe, expect, test } from "bun:test";
import { addSubtitlesToMaster, addTextAdaptationSet } from "./subtitle-manifests.ts";

const track = { uri: "subs/en/index.m3u8", language: "en", name: "English" };
const MEDIA_LINE = '#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",AUTOSELECT=YES,DEFAULT=NO,URI="subs/en/index.m3u8"';

/** Shaped like the transcoder's merged master (media/transcoder/hls-playlist.ts). */
const MASTER = [
  "#EXTM3U",
  "#EXT-X-VERSION:3",
  '#EXT-X-STREAM-INF:BANDWIDTH=985600,RESOLUTION=640x360,CODECS="avc1.4d401e,mp4a.40.2"',
  "360p/index.m3u8",
  "",
  '#EXT-X-STREAM-INF:BANDWIDTH=3220800,RESOLUTION=1280x720,CODECS="avc1.4d401f,mp4a.40.2"',
  "720p/index.m3u8",
  "",
].join("\n");

describe("addSubtitlesToMaster", () => {
  test("one SUBTITLES media line before the first variant, SUBTITLES on every variant", () => {
    const out = addSubtitlesToMaster(MASTER, track);
    expect(out.split("\n")).toEqual([
      "#EXTM3U",
      "#EXT-X-VERSION:3",
      MEDIA_LINE,
      '#EXT-X-STREAM-INF:BANDWIDTH=985600,RESOLUTION=640x360,CODECS="avc1.4d401e,mp4a.40.2",SUBTITLES="subs"',
      "360p/index.m3u8",
      "",
      '#EXT-X-STREAM-INF:BANDWIDTH=3220800,RESOLUTION=1280x720,CODECS="avc1.4d401f,mp4a.40.2",SUBTITLES="subs"',
      "720p/index.m3u8",
      "",
    ]);
  });

  test("applying it twice gives the same playlist", () => {
    const once = addSubtitlesToMaster(MASTER, track);
    expect(addSubtitlesToMaster(once, track)).toBe(once);
  });

  test("an audio-only master gets it too; a master without variants is refused", () => {
    const audio = '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=140800,CODECS="mp4a.40.2"\naudio/index.m3u8\n';
    expect(addSubtitlesToMaster(audio, track)).toContain('CODECS="mp4a.40.2",SUBTITLES="subs"\naudio/index.m3u8');
    expect(() => addSubtitlesToMaster("#EXTM3U\n", track)).toThrow();
  });
});

/** Shaped like Shaka Packager 3.4's static MPD (trimmed; media/drm/mpd.test.ts). */
const MPD = `<?xml version="1.0" encoding="UTF-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT2S">
  <Period id="0">
    <AdaptationSet id="0" contentType="video">
      <Representation id="0" bandwidth="515984" codecs="avc1.4d401e" mimeType="video/mp4" width="640" height="360"/>
    </AdaptationSet>
    <AdaptationSet id="1" contentType="audio">
      <Representation id="1" bandwidth="70817" codecs="mp4a.40.2" mimeType="audio/mp4"/>
    </AdaptationSet>
  </Period>
</MPD>
`;

describe("addTextAdaptationSet", () => {
  test("a text/vtt AdaptationSet with the whole file as one Representation, after the others, with fresh ids", () => {
    const out = addTextAdaptationSet(MPD, { baseUrl: "../transcript.vtt", language: "en" });
    const expected = [
      '    <AdaptationSet id="2" contentType="text" mimeType="text/vtt" lang="en">',
      '      <Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle"/>',
      '      <Representation id="2" bandwidth="256">',
      "        <BaseURL>../transcript.vtt</BaseURL>",
      "      </Representation>",
      "    </AdaptationSet>",
      "  </Period>",
    ].join("\n");
    expect(out).toContain(expected);
    expect(out.startsWith(MPD.slice(0, MPD.indexOf("  </Period>")))).toBe(true);
    expect(out.match(/<AdaptationSet /g)).toHaveLength(3);
  });

  test("applying it twice gives the same manifest; a manifest without a Period is refused", () => {
    const once = addTextAdaptationSet(MPD, { baseUrl: "../transcript.vtt", language: "en" });
    expect(addTextAdaptationSet(once, { baseUrl: "../transcript.vtt", language: "en" })).toBe(once);
    expect(() => addTextAdaptationSet("<MPD/>", { baseUrl: "x.vtt", language: "en" })).toThrow();
  });

  test("a manifest on one line: inserted right before </Period>, attribute values escaped", () => {
    const flat = '<MPD><Period><AdaptationSet id="0" contentType="video"></AdaptationSet></Period></MPD>';
    const out = addTextAdaptationSet(flat, { baseUrl: "a&b.vtt", language: "en" });
    expect(out).toStartWith('<MPD><Period><AdaptationSet id="0" contentType="video"></AdaptationSet><AdaptationSet id="1" contentType="text"');
    expect(out).toContain("<BaseURL>a&amp;b.vtt</BaseURL>");
    expect(out).toEndWith("</AdaptationSet></Period></MPD>");
  });
});
