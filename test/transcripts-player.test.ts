import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHROMIUM_MISSING, hasChromium, type PlayerHarness, startPlayer } from "./support/browser.ts";

if (!hasChromium) console.warn(CHROMIUM_MISSING);

/** The fixture's cues: one per 2 s subtitle segment. */
const FIXTURE_CUES = ["the quick brown fox", "jumps over the lazy dog", "and runs far away"];

/**
 * An HLS made here, not by the service, so the harness is proven alone: a
 * 6 s MPEG-TS variant (2 s segments, like the service's) and a hand-written
 * segmented WebVTT subtitle playlist, tied by a master with the SUBTITLES
 * group the service writes (`GROUP-ID="subs"`, `SUBTITLES="subs"` on the
 * variant). X-TIMESTAMP-MAP maps cue time 0 to ffmpeg's first PTS in MPEG-TS
 * (1.4 s = 126000 at 90 kHz).
 */
function makeFixtureHls(dir: string) {
  mkdirSync(join(dir, "v"), { recursive: true });
  mkdirSync(join(dir, "subs", "en"), { recursive: true });
  const r = Bun.spawnSync(
    [
      "ffmpeg",
      "-hide_banner",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=320x180:rate=25:duration=6",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=6",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "50",
      "-keyint_min",
      "50",
      "-sc_threshold",
      "0",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-f",
      "hls",
      "-hls_time",
      "2",
      "-hls_playlist_type",
      "vod",
      "-hls_segment_filename",
      join(dir, "v", "seg-%05d.ts"),
      join(dir, "v", "index.m3u8"),
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (r.exitCode !== 0) throw new Error(`ffmpeg exited ${r.exitCode}: ${r.stderr.toString()}`);
  const ts = (s: number) => `00:00:${String(s).padStart(2, "0")}.000`;
  const playlist = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD"];
  FIXTURE_CUES.forEach((text, i) => {
    const name = `seg-${i}.vtt`;
    writeFileSync(join(dir, "subs", "en", name), `WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n\n${i + 1}\n${ts(i * 2)} --> ${ts(i * 2 + 2)}\n${text}\n`);
    playlist.push("#EXTINF:2.000,", name);
  });
  playlist.push("#EXT-X-ENDLIST");
  writeFileSync(join(dir, "subs", "en", "index.m3u8"), `${playlist.join("\n")}\n`);
  writeFileSync(
    join(dir, "master.m3u8"),
    [
      "#EXTM3U",
      "#EXT-X-VERSION:3",
      '#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",DEFAULT=NO,AUTOSELECT=YES,URI="subs/en/index.m3u8"',
      '#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=320x180,CODECS="avc1.640015,mp4a.40.2",SUBTITLES="subs"',
      "v/index.m3u8",
      "",
    ].join("\n"),
  );
}

describe.skipIf(!hasChromium)("hls.js in Chromium: subtitle renditions", () => {
  let player: PlayerHarness;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "hls-subs-"));
    makeFixtureHls(dir);
    player = await startPlayer({ files: dir });
  });
  afterAll(async () => {
    await player?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("harness: a hand-made master with a SUBTITLES group lists one track (English, en); its WebVTT cues reach the video's TextTrack", async () => {
    const r = await player.playHls({ manifestUrl: player.fileUrl("master.m3u8") });
    expect(r.currentTime).toBeGreaterThan(2);
    expect(r.subtitleTracks).toEqual([{ name: "English", lang: "en" }]);
    expect(r.cues?.length).toBeGreaterThan(0);
    for (const cue of r.cues ?? []) expect(FIXTURE_CUES).toContain(cue);
  }, 30_000);

  test("harness: a master without the SUBTITLES group lists no subtitle track", async () => {
    writeFileSync(join(dir, "plain.m3u8"), "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=320x180\nv/index.m3u8\n");
    const r = await player.playHls({ manifestUrl: player.fileUrl("plain.m3u8") });
    expect(r.currentTime).toBeGreaterThan(2);
    expect(r.subtitleTracks).toEqual([]);
  }, 30_000);

  test("harness: a missing master rejects with hls.js's fatal error (manifestLoadError, 404)", async () => {
    const r = await player.tryHls({ manifestUrl: player.fileUrl("nope.m3u8") });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ fatal: true, type: "networkError", details: "manifestLoadError", status: 404 });
  });
});
