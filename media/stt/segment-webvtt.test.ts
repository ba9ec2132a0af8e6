import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { DEFAULT_MPEGTS, segmentWebVtt } from "./segment-webvtt.ts";
import { buildWebVtt, parseWebVtt } from "./webvtt.ts";

setDefaultTimeout(120_000);

const words = Array.from({ length: 60 }, (_, i) => ({ text: `w${i}`, start: i * 0.4, end: i * 0.4 + 0.35 }));

function parsePlaylist(m3u8: string) {
  const lines = m3u8.trim().split("\n");
  const entries: Array<{ duration: number; uri: string }> = [];
  lines.forEach((l, i) => {
    if (l.startsWith("#EXTINF:")) entries.push({ duration: Number.parseFloat(l.slice(8)), uri: lines[i + 1] ?? "" });
  });
  const target = Number(lines.find((l) => l.startsWith("#EXT-X-TARGETDURATION:"))?.split(":")[1]);
  return { lines, entries, target };
}

describe("segmentWebVtt", () => {
  test("a VOD playlist whose segments cover the duration, each a WebVTT file with the timestamp map", () => {
    const total = 23.9;
    const vtt = buildWebVtt(words, { durationSeconds: total });
    const { playlist, segments } = segmentWebVtt(vtt, 6, total, { mpegts: 133200 });
    const { lines, entries, target } = parsePlaylist(playlist);
    expect(lines[0]).toBe("#EXTM3U");
    expect(lines).toContain("#EXT-X-PLAYLIST-TYPE:VOD");
    expect(lines.at(-1)).toBe("#EXT-X-ENDLIST");
    expect(entries.map((e) => e.uri)).toEqual(segments.map((s) => s.name));
    expect(entries.length).toBe(4);
    expect(entries.reduce((n, e) => n + e.duration, 0)).toBeCloseTo(total, 3);
    for (const e of entries) expect(Math.round(e.duration)).toBeLessThanOrEqual(target);
    for (const [i, s] of segments.entries()) {
      expect(s.text.startsWith("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:133200,LOCAL:00:00:00.000\n")).toBe(true);
      // Cues keep their source times and overlap their segment.
      for (const c of parseWebVtt(s.text).cues) {
        expect(c.end).toBeGreaterThan(i * 6);
        expect(c.start).toBeLessThan((i + 1) * 6);
      }
    }
    // Every cue of the source is in some segment.
    const all = new Set(segments.flatMap((s) => parseWebVtt(s.text).cues.map((c) => `${c.start}-${c.lines.join(" ")}`)));
    expect(all.size).toBe(parseWebVtt(vtt).cues.length);
  });

  test("an exact multiple gives no empty tail segment; the default map is ffmpeg's 1.4 s mpegts start", () => {
    const { playlist, segments } = segmentWebVtt("WEBVTT\n\n", 2, 6);
    expect(parsePlaylist(playlist).entries.map((e) => e.duration)).toEqual([2, 2, 2]);
    expect(segments[0]?.text).toBe(`WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:${DEFAULT_MPEGTS},LOCAL:00:00:00.000\n\n`);
  });

  test("a media shorter than one segment is one segment", () => {
    const { playlist } = segmentWebVtt("WEBVTT\n\n", 6, 1.5);
    expect(parsePlaylist(playlist).entries).toEqual([{ duration: 1.5, uri: "sub-00000.vtt" }]);
    expect(playlist).toContain("#EXT-X-TARGETDURATION:2");
  });
});
