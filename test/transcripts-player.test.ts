import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { POCKETSPHINX_APT, findPocketsphinx } from "../media/stt/pocketsphinx.ts";
import { parseWebVtt } from "../media/stt/webvtt.ts";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { CHROMIUM_MISSING, hasChromium, type PlayerHarness, startPlayer } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

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
    // X-TIMESTAMP-MAP maps cue time 0 to the first PTS: the first cue starts at the media's 0.
    expect(r.cueTimes?.find((c) => c.text === FIXTURE_CUES[0])?.start).toBeCloseTo(0, 1);
  }, 120_000);

  test("harness: a master without the SUBTITLES group lists no subtitle track", async () => {
    writeFileSync(join(dir, "plain.m3u8"), "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=320x180\nv/index.m3u8\n");
    const r = await player.playHls({ manifestUrl: player.fileUrl("plain.m3u8") });
    expect(r.currentTime).toBeGreaterThan(2);
    expect(r.subtitleTracks).toEqual([]);
  }, 120_000);

  test("harness: a missing master rejects with hls.js's fatal error (manifestLoadError, 404)", async () => {
    const r = await player.tryHls({ manifestUrl: player.fileUrl("nope.m3u8") });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ fatal: true, type: "networkError", details: "manifestLoadError", status: 404 });
  });
});

const native = await hasNativeFfmpeg();
const pocketsphinx = findPocketsphinx() !== null;
const espeak = Bun.which("espeak-ng") !== null;
const e2eMissing = [!hasChromium && "Chromium", !native && "native ffmpeg", !pocketsphinx && `pocketsphinx (${POCKETSPHINX_APT})`, !espeak && "espeak-ng (apt-get install -y espeak-ng)"].filter(
  Boolean,
);
if (e2eMissing.length) console.warn(`transcripts player e2e skipped: missing ${e2eMissing.join(", ")}`);

/** Spoken by espeak-ng into the clip: common words pocketsphinx's en-us model knows. */
const SPOKEN = "Hello and welcome. Today we talk about the weather. The morning is cold, but the afternoon will be warm and sunny. Thank you for watching.";
/** Words a cue may be matched on: the spoken ones of four letters or more (not "the", "and", "we"). */
const CONTENT_WORDS = [...new Set(SPOKEN.toLowerCase().match(/[a-z]{4,}/g) ?? [])];

/** A ~10 s clip (a 320x240 colour frame, espeak-ng's voice as AAC) made at test time: nothing downloaded. */
function makeSpeechClip(dir: string): string {
  const wav = join(dir, "speech.wav");
  const mp4 = join(dir, "speech.mp4");
  const say = Bun.spawnSync(["espeak-ng", "-v", "en-us", "-s", "150", "-w", wav, SPOKEN], { stdout: "pipe", stderr: "pipe" });
  if (say.exitCode !== 0) throw new Error(`espeak-ng exited ${say.exitCode}: ${say.stderr.toString()}`);
  const r = Bun.spawnSync(
    [
      "ffmpeg",
      "-hide_banner",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      "color=c=navy:size=320x240:rate=25",
      "-i",
      wav,
      "-shortest",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-ar",
      "44100",
      mp4,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (r.exitCode !== 0) throw new Error(`ffmpeg exited ${r.exitCode}: ${r.stderr.toString()}`);
  return mp4;
}

/**
 * The service end to end: a video with `subtitles: true` (native backend,
 * pocketsphinx) completes, and hls.js in Chromium, on the page server's origin
 * (not the service's), plays `video.url`, lists the master's subtitle
 * rendition and renders cues with words that were spoken.
 */
describe.skipIf(e2eMissing.length > 0)("transcripts: the service's subtitle rendition in hls.js (Chromium)", () => {
  let player: PlayerHarness;
  let t: TestService;
  let dir: string;
  let video: any;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "speech-clip-"));
    makeSpeechClip(dir);
    // The page server also serves the clip to the service as its source_url.
    [player, t] = await Promise.all([startPlayer({ files: dir }), startTestService({ env: { MEDIA_BACKEND: "native" } })]);
    const created = await ok(t.api("/videos/", { method: "POST", json: { source_url: player.fileUrl("speech.mp4"), subtitles: true } }), "createVideo");
    if (!created.success) throw new Error(`POST /videos/ failed: ${JSON.stringify(created)}`);
    video = await waitFor(
      async () => {
        const b = await ok(t.api(`/videos/${created.data.asset.public_id}/`), "getVideo");
        return ["COMPLETED", "ERROR"].includes(b.data?.video?.status) ? b.data.video : undefined;
      },
      { timeoutMs: 60_000, what: "subtitled video COMPLETED" },
    );
  }, 90_000);
  afterAll(async () => {
    await player?.close();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("video.url plays in hls.js (cross-origin), which lists the English subtitle track; its cues carry spoken words found in transcript_url", async () => {
    expect(video).toMatchObject({ status: "COMPLETED" });
    expect(video.url).toEndWith(".m3u8");
    expect(new URL(video.url).origin).not.toBe(player.origin);

    const r = await player.playHls({ manifestUrl: video.url, untilSeconds: 3 });
    expect(r.currentTime).toBeGreaterThan(3);
    expect(r.subtitleTracks).toEqual([{ name: "English", lang: "en" }]);
    const cues = r.cues ?? [];
    expect(cues.length).toBeGreaterThan(0);
    const heard = cues.join(" ").toLowerCase();
    const matched = CONTENT_WORDS.filter((w) => new RegExp(`\\b${w}\\b`).test(heard));
    if (!matched.length) throw new Error(`no spoken word in the cues: ${JSON.stringify(cues)}`);
    expect(matched.length).toBeGreaterThan(0);
    // The cues hls.js rendered are the transcript's (the segmented WebVTT is cut from transcript_url),
    // at the transcript's times: the subtitle segments' X-TIMESTAMP-MAP matches the media's first PTS.
    const transcript = parseWebVtt(await (await fetch(video.transcript_url)).text());
    for (const cue of r.cueTimes ?? []) {
      const same = transcript.cues.find((c) => c.lines.join("\n") === cue.text);
      if (!same) throw new Error(`cue ${JSON.stringify(cue.text)} is not in transcript_url`);
      expect(Math.abs(cue.start - same.start)).toBeLessThan(0.1);
      expect(Math.abs(cue.end - same.end)).toBeLessThan(0.1);
    }
  }, 120_000);
});
