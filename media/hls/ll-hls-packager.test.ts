import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import HLS from "hls-parser";
import { readFlvTags } from "../flv/flv-reader.ts";
import { closeMediaTools, runFfmpeg } from "../test-support/media-tools.ts";
import { LIVE_HLS_LATENCY_PRESETS } from "./live-hls-packager.ts";
import { createLlHlsPackager, LL_HLS_PART_SECONDS, type LlHlsPartInfo } from "./ll-hls-packager.ts";
import { blockingVerdict, parseLlPlaylist, playlistEdge } from "./ll-playlist.ts";

setDefaultTimeout(120_000);

const FIXTURE = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");
const tags = [...readFlvTags(new Uint8Array(await Bun.file(FIXTURE).arrayBuffer()))];
afterAll(closeMediaTools);
const parse = (text: string) => HLS.parse(text) as HLS.types.MediaPlaylist;

describe("LL-HLS packager (CMAF parts, NORMAL)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ll-hls-"));
  const parts: LlHlsPartInfo[] = [];
  const packager = createLlHlsPackager({ dir, ...LIVE_HLS_LATENCY_PRESETS.NORMAL, onPart: (p) => parts.push(p) });
  // The playlist as a live player sees it, half-way through the second segment.
  let live = "";
  for (const t of tags) {
    await packager.push(t);
    if (!live && t.timestamp >= 3000) live = readFileSync(join(dir, "index.m3u8"), "utf8");
  }
  await packager.end();
  const ended = parse(readFileSync(join(dir, "index.m3u8"), "utf8"));

  test("the live playlist carries LL-HLS: PART-INF <= 0.5 s, SERVER-CONTROL blocking reload with PART-HOLD-BACK >= 3 parts, parts, a preload hint", () => {
    const p = parse(live);
    expect(p.partTargetDuration).toBe(LL_HLS_PART_SECONDS);
    expect(p.partTargetDuration!).toBeLessThanOrEqual(0.5);
    expect(p.lowLatencyCompatibility).toMatchObject({ canBlockReload: true });
    expect(p.lowLatencyCompatibility!.partHoldBack!).toBeGreaterThanOrEqual(3 * p.partTargetDuration!);
    // Segment 0 whole (a URI and an EXTINF: players without LL-HLS play it); segment 1 in progress, parts only.
    expect(p.segments.map((s) => [s.uri, s.mediaSequenceNumber])).toEqual([
      ["segment-0.m4s", 0],
      ["", 1],
    ]);
    expect(p.segments[0]!.duration).toBeGreaterThan(1.9);
    const open = { parts: p.segments[1]!.parts.filter((x) => !x.hint) };
    expect(open.parts.length).toBeGreaterThan(0);
    expect(p.renditionReports).toEqual([]); // one rendition: no EXT-X-RENDITION-REPORT
    const hint = live.split("\n").find((l) => l.startsWith("#EXT-X-PRELOAD-HINT:"))!;
    expect(hint).toBe(`#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-1-${open.parts.length}.m4s"`);
    expect(live).toContain('#EXT-X-MAP:URI="init.mp4"');
  });

  test("every part is at most PART-TARGET and all but a segment's last at least 85% of it; parts sum to their segment; first part of a segment is INDEPENDENT", () => {
    expect(ended.endlist).toBe(true);
    expect(ended.segments.length).toBe(3);
    for (const s of ended.segments.slice(-2)) {
      expect(s.parts.length).toBeGreaterThan(3);
      s.parts.forEach((x, i) => {
        expect(x.duration!).toBeLessThanOrEqual(LL_HLS_PART_SECONDS);
        if (i < s.parts.length - 1) expect(x.duration!).toBeGreaterThanOrEqual(0.85 * LL_HLS_PART_SECONDS);
      });
      expect(s.parts[0]!.independent).toBe(true);
      expect(Math.abs(s.parts.reduce((n, x) => n + x.duration!, 0) - s.duration)).toBeLessThan(0.005);
      expect(Math.abs(s.duration - 2)).toBeLessThan(0.1);
    }
    expect(ended.segments.length).toBe(3);
    expect(parts.length).toBeGreaterThan(15);
  });

  test("segments and parts decode with ffmpeg (init + media), segments hold 2 s of 640x360 H.264 and AAC", async () => {
    const init = readFileSync(join(dir, "init.mp4"));
    for (const name of [ended.segments[1]!.uri, ended.segments[2]!.parts[1]!.uri]) {
      const path = join(dir, `joined-${name}.mp4`);
      await Bun.write(path, Buffer.concat([init, readFileSync(join(dir, name))]));
      const out = await runFfmpeg(["-v", "error", "-i", path, "-f", "null", "-"], { input: path });
      expect({ exitCode: out.exitCode, stderr: out.stderr }).toEqual({ exitCode: 0, stderr: "" });
    }
    const all = await runFfmpeg(["-v", "error", "-i", join(dir, "index.m3u8"), "-f", "null", "-"], { input: join(dir, "index.m3u8") });
    expect({ exitCode: all.exitCode, stderr: all.stderr }).toEqual({ exitCode: 0, stderr: "" });
  });
});

describe("a playlist continued by another packager (a broadcast taken over after its owner died)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ll-hls-resume-"));
  // The first owner: 4.5 s of media, then killed (no end(): its open segment's parts stay, never finished).
  const first = createLlHlsPackager({ dir, ...LIVE_HLS_LATENCY_PRESETS.NORMAL });
  for (const t of tags.filter((x) => x.timestamp < 4500)) await first.push(t);
  const left = readFileSync(join(dir, "index.m3u8"), "utf8");
  const files = new Map(
    readdirSync(dir)
      .filter((n) => n !== "index.m3u8")
      .map((n) => [n, readFileSync(join(dir, n))]),
  );
  const before = parseLlPlaylist(left);
  // The new owner: the whole fixture again, as its encoder's new session.
  const second = createLlHlsPackager({ dir, ...LIVE_HLS_LATENCY_PRESETS.NORMAL, resume: { ...before, prefix: "tb-" } });
  for (const t of tags) await second.push(t);
  await second.end();
  const text = readFileSync(join(dir, "index.m3u8"), "utf8");
  const after = parseLlPlaylist(text);

  test("sequence numbers go on after the last whole segment, across one discontinuity with its own init segment", () => {
    expect(before.segments.map((x) => x.sequence)).toEqual([0, 1]);
    expect(after.segments.map((x) => x.sequence)).toEqual([0, 1, 2, 3, 4]);
    expect(after.segments.map((x) => x.uri)).toEqual(["segment-0.m4s", "segment-1.m4s", "tb-segment-2.m4s", "tb-segment-3.m4s", "tb-segment-4.m4s"]);
    expect(after.segments.map((x) => x.discontinuity ?? false)).toEqual([false, false, true, false, false]);
    expect(text).toContain('#EXT-X-MAP:URI="init.mp4"');
    expect(text).toContain('#EXTINF:2.000,\nsegment-1.m4s\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI="tb-init.mp4"');
    const p = parse(text);
    expect(p.segments.map((x) => x.discontinuity === true)).toEqual([false, false, true, false, false]);
  });

  test("none of the first owner's files is overwritten (its unfinished segment's parts included), and the whole playlist decodes with ffmpeg", async () => {
    expect([...files.keys()].some((n) => n.startsWith("part-2-"))).toBe(true);
    for (const [name, bytes] of files) expect(readFileSync(join(dir, name)).equals(bytes)).toBe(true);
    const all = await runFfmpeg(["-v", "error", "-i", join(dir, "index.m3u8"), "-f", "null", "-"], { input: join(dir, "index.m3u8") });
    expect({ exitCode: all.exitCode, stderr: all.stderr }).toEqual({ exitCode: 0, stderr: "" });
  });

  test("the window slides past the join: EXT-X-DISCONTINUITY-SEQUENCE counts the discontinuity that left", async () => {
    const dir2 = mkdtempSync(join(tmpdir(), "ll-hls-resume-"));
    const small = createLlHlsPackager({ dir: dir2, ...LIVE_HLS_LATENCY_PRESETS.NORMAL, windowSegments: 2, resume: { ...before, prefix: "tc-" } });
    for (const t of tags) await small.push(t);
    await small.end();
    const t2 = readFileSync(join(dir2, "index.m3u8"), "utf8");
    expect(t2).toContain("#EXT-X-DISCONTINUITY-SEQUENCE:1");
    expect(t2).not.toContain("#EXT-X-DISCONTINUITY\n");
    expect(t2).toContain('#EXT-X-MAP:URI="tc-init.mp4"');
  });
});

describe("blocking reload verdicts (RFC 8216bis 6.2.5.2)", () => {
  const edge = playlistEdge(
    [
      "#EXTM3U",
      "#EXT-X-TARGETDURATION:2",
      "#EXT-X-MEDIA-SEQUENCE:4",
      "#EXTINF:2.000,",
      "segment-4.m4s",
      '#EXT-X-PART:DURATION=0.334,URI="part-5-0.m4s",INDEPENDENT=YES',
      '#EXT-X-PART:DURATION=0.334,URI="part-5-1.m4s"',
    ].join("\n"),
  );
  test("a part or segment already there is ready, the next ones wait, far ahead is 400", () => {
    expect(edge).toEqual({ lastMsn: 4, openParts: 2, ended: false, targetDuration: 2 });
    expect(blockingVerdict(edge, 4, null)).toBe("ready");
    expect(blockingVerdict(edge, 5, 1)).toBe("ready");
    expect(blockingVerdict(edge, 5, 2)).toBe("wait");
    expect(blockingVerdict(edge, 5, null)).toBe("wait");
    expect(blockingVerdict(edge, 6, 0)).toBe("wait");
    expect(blockingVerdict(edge, 7, 0)).toBe("bad");
    expect(blockingVerdict(edge, 5, 9)).toBe("bad");
  });
});
