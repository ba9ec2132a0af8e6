/**
 * Issue 29 item 1: the 1.5x rule, and a real native job whose HLS grows while it encodes: every snapshot lists
 * only complete segments, the master comes at the first playable moment with the whole ladder, and the final
 * playlists are the VOD playlists of a one-shot job.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { keepsAhead } from "./early-hls.ts";
import { createNativeTranscoder } from "./create-native-transcoder.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";
import { parseMasterPlaylist, parseMediaPlaylist } from "./hls-playlist.ts";
import { removeDir, rung, tempOutDir } from "./test-support/fixtures.ts";
import type { HlsSnapshot, TranscodeResult } from "./types.ts";

setDefaultTimeout(120_000);

describe("keepsAhead (the 1.5x rule)", () => {
  const seg = 4;
  test("two segments at 1.5x or faster are enough; one is not (the player's playlist reload needs a segment of lead)", () => {
    expect(keepsAhead({ produced: 8, elapsed: 2, total: 600, segment: seg })).toBe(true);
    expect(keepsAhead({ produced: 4, elapsed: 0.5, total: 600, segment: seg })).toBe(false);
    expect(keepsAhead({ produced: 8, elapsed: 8 / 1.49, total: 600, segment: seg })).toBe(false);
  });
  test("a slower rung becomes playable once enough of it is ahead", () => {
    // 1x: produced + (1 / 1.5) * (30 - 8) >= 30 needs produced >= 15.33.
    expect(keepsAhead({ produced: 12, elapsed: 12, total: 30, segment: seg })).toBe(false);
    expect(keepsAhead({ produced: 16, elapsed: 16, total: 30, segment: seg })).toBe(true);
  });
  test("complete, or shorter than two segments when complete; unknown length needs 1.5x", () => {
    expect(keepsAhead({ produced: 3, elapsed: 100, total: 3, segment: seg })).toBe(true);
    expect(keepsAhead({ produced: 0, elapsed: 1, total: 30, segment: seg })).toBe(false);
    expect(keepsAhead({ produced: 8, elapsed: 4, total: null, segment: seg })).toBe(true);
    expect(keepsAhead({ produced: 8, elapsed: 8, total: null, segment: seg })).toBe(false);
  });
});

describe.skipIf(!hasNativeFfmpeg())("a native job's HLS grows while it encodes", () => {
  const work = tempOutDir("early-src");
  const outDir = tempOutDir("early-out");
  const source = path.join(work, "src.mp4");
  const snapshots: Array<{ snapshot: HlsSnapshot; missing: string[]; masterText: string | null }> = [];
  let result: TranscodeResult;

  beforeAll(async () => {
    // 16 s of 480p noise (slow to encode on purpose: the job must take several of the watcher's 200 ms reads).
    const enc = Bun.spawn([
      "nice",
      "-n",
      "5",
      "ffmpeg",
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=854x480:rate=30:duration=16,noise=alls=40:allf=t",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=16",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-c:a",
      "aac",
      "-shortest",
      "-y",
      source,
    ]);
    expect(await enc.exited).toBe(0);
    const transcoder = createNativeTranscoder({ preset: "veryfast" });
    try {
      result = await transcoder.transcode(
        { input: source, outDir, ladder: [rung(240, 300), rung(360, 600), rung(480, 1200)], downloads: [], segmentSeconds: 2, audioVariant: true },
        {
          onOutputs: (snapshot) => {
            // Every segment a playlist lists is complete on disk when the caller hears of it.
            const missing = snapshot.playlists.flatMap((p) => p.segments).filter((s) => !(fs.statSync(path.join(outDir, s), { throwIfNoEntry: false })?.size ?? 0));
            const masterText = snapshot.master ? fs.readFileSync(path.join(outDir, snapshot.master), "utf8") : null;
            snapshots.push({ snapshot, missing, masterText });
          },
        },
      );
    } finally {
      await transcoder.close();
    }
  });

  afterAll(() => {
    removeDir(work);
    removeDir(outDir);
  });

  test("each growth lists only complete segments, as an EVENT playlist; the master lists the whole ladder before the end", () => {
    expect(snapshots.length).toBeGreaterThan(1);
    for (const s of snapshots) expect(s.missing).toEqual([]);
    for (const s of snapshots) for (const p of s.snapshot.playlists) expect(parseMediaPlaylist(p.text).playlistType).toBe("EVENT");
    const firstPlayable = snapshots.find((s) => s.snapshot.master !== null)!;
    expect(firstPlayable).toBeDefined();
    // Playable while the encode still ran: some rung's playlist had no ENDLIST yet.
    expect(firstPlayable.snapshot.playlists.some((p) => !parseMediaPlaylist(p.text).endList)).toBe(true);
    expect(parseMasterPlaylist(firstPlayable.masterText!).map((v) => v.uri)).toEqual(["240p/index.m3u8", "360p/index.m3u8", "480p/index.m3u8"]);
    // Every rung had two segments (the rule's lead) when the master was written.
    for (const p of firstPlayable.snapshot.playlists) expect(p.seconds).toBeGreaterThanOrEqual(4 - 0.01);
  });

  test("the final playlists are VOD with ENDLIST, the grown playlist retyped; no temporary file is left", () => {
    for (const r of ["240p", "360p", "480p", "audio-only"]) {
      const text = fs.readFileSync(path.join(outDir, "hls", r, "index.m3u8"), "utf8");
      const parsed = parseMediaPlaylist(text);
      expect(parsed.playlistType).toBe("VOD");
      expect(parsed.endList).toBe(true);
      expect(parsed.totalDuration).toBeCloseTo(16, 0);
      const last = snapshots.at(-1)!.snapshot.playlists.find((p) => p.file === `hls/${r}/index.m3u8`);
      if (last) expect(text).toBe(last.text.replace("#EXT-X-PLAYLIST-TYPE:EVENT", "#EXT-X-PLAYLIST-TYPE:VOD"));
    }
    const leftovers = fs
      .readdirSync(outDir, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".tmp") || /master-.*\.m3u8$/.test(f));
    expect(leftovers).toEqual([]);
    expect(parseMasterPlaylist(fs.readFileSync(path.join(outDir, result.masterPlaylist), "utf8")).map((v) => v.uri)).toEqual([
      "240p/index.m3u8",
      "360p/index.m3u8",
      "480p/index.m3u8",
      "audio-only/index.m3u8",
    ]);
  });
});
