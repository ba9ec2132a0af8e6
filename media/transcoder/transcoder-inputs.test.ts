/** The awkward inputs, on both backends: odd sizes, tiny sources, one stream only, garbage. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { closeMediaTools } from "../test-support/media-tools.ts";
import * as fs from "node:fs";
import * as path from "node:path";
import { createTranscoder } from "./create-transcoder.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";
import { parseMasterPlaylist, parseMediaPlaylist } from "./hls-playlist.ts";
import { ffprobeFile } from "./test-support/ffprobe-file.ts";
import { SHORT_LADDER, fixture, removeDir, rung, tempOutDir } from "./test-support/fixtures.ts";
import { TranscodeError } from "./transcode-error.ts";
import type { Backend, TranscodeJob, TranscodeResult, Transcoder } from "./types.ts";

setDefaultTimeout(120_000);

const backends: Backend[] = hasNativeFfmpeg() ? ["wasm", "native"] : ["wasm"];

const JOBS = {
  odd: { input: "av-odd-322x242-2s.mp4", ladder: SHORT_LADDER, downloads: [{ rung: "360p", format: "mkv" }] },
  tiny: { input: "av-odd-322x242-2s.mp4", ladder: [rung(360), rung(720)], downloads: [] },
  audioOnly: { input: "audio-only-2s.m4a", ladder: SHORT_LADDER, downloads: [{ rung: "240p", format: "mkv" }] },
  videoOnly: { input: "video-only-2s.mp4", ladder: SHORT_LADDER, downloads: [{ rung: "144p", format: "mp4-encrypted" }] },
  recording: { input: "live-360p-6s.flv", ladder: SHORT_LADDER.slice(0, 2), downloads: [] },
  corrupt: { input: "corrupt.mp4", ladder: SHORT_LADDER, downloads: [] },
} satisfies Record<string, { input: string; ladder: TranscodeJob["ladder"]; downloads: TranscodeJob["downloads"] }>;
type JobName = keyof typeof JOBS;

interface Outcome {
  outDir: string;
  result?: TranscodeResult;
  error?: unknown;
}
const outcomes = new Map<string, Outcome>();
const transcoders: Transcoder[] = [];

beforeAll(async () => {
  const all: Promise<void>[] = [];
  for (const backend of backends) {
    const t = createTranscoder({ backend, workers: 2 });
    transcoders.push(t);
    for (const [name, job] of Object.entries(JOBS)) {
      const outDir = tempOutDir(`${backend}-${name}`);
      const o: Outcome = { outDir };
      outcomes.set(`${backend}/${name}`, o);
      all.push(
        t
          .transcode({ ...job, input: fixture(job.input), outDir, segmentSeconds: 2 }, { timeoutMs: 90_000 })
          .then((r) => void (o.result = r))
          .catch((e: unknown) => void (o.error = e)),
      );
    }
  }
  await Promise.all(all);
}, 110_000);

afterAll(async () => {
  await closeMediaTools();
  await Promise.all(transcoders.map((t) => t.close()));
  for (const o of outcomes.values()) removeDir(o.outDir);
});

function ok(backend: Backend, name: JobName): { result: TranscodeResult; outDir: string } {
  const o = outcomes.get(`${backend}/${name}`)!;
  if (o.error) throw o.error;
  return { result: o.result!, outDir: o.outDir };
}
const text = (dir: string, rel: string) => fs.readFileSync(path.join(dir, rel), "utf8");

async function probeFirstSegment(outDir: string, playlist: string) {
  const first = parseMediaPlaylist(text(outDir, playlist)).segments[0]!;
  return ffprobeFile(path.join(outDir, path.dirname(playlist), first.uri));
}

describe.each(backends)("%s backend inputs", (backend) => {
  test("odd 322x242: even sizes, no upscale, and a 360p download request falls back to 240p", async () => {
    const { result, outDir } = ok(backend, "odd");
    expect(result.renditions.map((r) => [r.quality, r.width, r.height])).toEqual([
      ["144p", 192, 144],
      ["240p", 320, 240],
    ]);
    for (const r of result.renditions) {
      const v = (await probeFirstSegment(outDir, r.playlist)).streams.find((s) => s.codec_type === "video")!;
      expect([v.width, v.height]).toEqual([r.width, r.height]);
    }
    expect(result.renditions[1]!.download).toMatchObject({ file: "downloads/240p.mkv", format: "mkv", password: null });
  });

  test("a source below every rung gets one rung at its own height", () => {
    const { result } = ok(backend, "tiny");
    expect(result.renditions.map((r) => [r.quality, r.width, r.height])).toEqual([["242p", 322, 242]]);
  });

  test('audio-only: one "audio" rendition, AAC only, in the master playlist', async () => {
    const { result, outDir } = ok(backend, "audioOnly");
    expect(result.renditions).toHaveLength(1);
    const audio = result.renditions[0]!;
    expect(audio).toMatchObject({ quality: "audio", width: 0, height: 0, playlist: "hls/audio/index.m3u8" });
    const [variant] = parseMasterPlaylist(text(outDir, result.masterPlaylist));
    expect(variant).toMatchObject({ uri: "audio/index.m3u8", width: null, codecs: ["mp4a.40.2"] });
    const seg = await probeFirstSegment(outDir, audio.playlist);
    expect(seg.streams.map((s) => s.codec_name)).toEqual(["aac"]);
    expect(result.durationSeconds).toBeCloseTo(2, 0);
    expect(audio.download).toMatchObject({ file: "downloads/audio.mkv", format: "mkv" });
    const dl = await ffprobeFile(path.join(outDir, audio.download!.file));
    expect(dl.streams.map((s) => s.codec_name)).toEqual(["aac"]);
  });

  test("video-only: H.264 renditions without audio, encrypted download too", async () => {
    const { result, outDir } = ok(backend, "videoOnly");
    expect(result.renditions.map((r) => r.quality)).toEqual(["144p", "240p", "360p"]);
    const variants = parseMasterPlaylist(text(outDir, result.masterPlaylist));
    for (const v of variants) expect(v.codecs.every((c) => c.startsWith("avc1."))).toBe(true);
    const seg = await probeFirstSegment(outDir, result.renditions[0]!.playlist);
    expect(seg.streams.map((s) => s.codec_type)).toEqual(["video"]);
    expect(result.renditions[0]!.download!.password).toMatch(/^[0-9a-f]{32}$/);
  });

  test("an FLV live recording transcodes like an upload", () => {
    const { result } = ok(backend, "recording");
    expect(result.probe.formatName).toBe("flv");
    expect(result.renditions.map((r) => r.quality)).toEqual(["144p", "240p"]);
    expect(result.durationSeconds).toBeGreaterThan(5.5);
  });

  test("garbage input fails with INPUT_UNSUPPORTED, from transcode and from probe", async () => {
    const err = outcomes.get(`${backend}/corrupt`)!.error;
    expect(err).toBeInstanceOf(TranscodeError);
    expect((err as TranscodeError).code).toBe("INPUT_UNSUPPORTED");
    const t = transcoders[backends.indexOf(backend)]!;
    await expect(t.probe(fixture("corrupt.mp4"))).rejects.toMatchObject({ code: "INPUT_UNSUPPORTED" });
    await expect(t.probe(fixture("does-not-exist.mp4"))).rejects.toMatchObject({ code: "INPUT_UNSUPPORTED" });
  });

  test("probe reports the source", async () => {
    const t = transcoders[backends.indexOf(backend)]!;
    expect(await t.probe(fixture("av-odd-322x242-2s.mp4"))).toEqual({
      durationSeconds: 2,
      width: 322,
      height: 242,
      hasVideo: true,
      hasAudio: true,
      videoCodec: "h264",
      audioCodec: "aac",
      audioSampleRate: 44100,
      formatName: "mov,mp4,m4a,3gp,3g2,mj2",
      frameRate: 25,
    });
  });

  test("malformed jobs are rejected before any work", async () => {
    const t = transcoders[backends.indexOf(backend)]!;
    const base = { input: fixture("av-360p-2s.mp4"), outDir: "/tmp", ladder: SHORT_LADDER, downloads: [] };
    await expect(t.transcode({ ...base, outDir: "relative/dir" })).rejects.toMatchObject({ code: "INVALID_JOB" });
    await expect(t.transcode({ ...base, ladder: [{ ...rung(360), name: "../x" }] })).rejects.toMatchObject({ code: "INVALID_JOB" });
  });
});
