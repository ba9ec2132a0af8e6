/**
 * Issue 27 item 4 on both backends: static renditions (an MP4 of a rung, an M4A) and the master's audio-only
 * variant, made by the job's copy run, checked with the system's ffprobe and by reading the MP4 boxes.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { closeMediaTools, ffprobeJson } from "../test-support/media-tools.ts";
import { hasPackager } from "../drm/packager-binary.ts";
import { createTranscoder } from "./create-transcoder.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";
import { parseMasterPlaylist, parseMediaPlaylist } from "./hls-playlist.ts";
import { ffprobeFile } from "./test-support/ffprobe-file.ts";
import { fixture, removeDir, rung, tempOutDir } from "./test-support/fixtures.ts";
import { topLevelBoxes } from "./test-support/mp4-boxes.ts";
import { isTranscodeError } from "./transcode-error.ts";
import type { Backend, TranscodeResult, Transcoder } from "./types.ts";

setDefaultTimeout(180_000);

const backends: Backend[] = hasNativeFfmpeg() ? ["wasm", "native"] : ["wasm"];
const LADDER = [rung(144, 100, 48), rung(240, 150, 64)];
const runs = new Map<Backend, { transcoder: Transcoder; outDir: string; result: TranscodeResult }>();

beforeAll(async () => {
  await Promise.all(
    backends.map(async (backend) => {
      // Two wasm workers: the chunked layout, whose copies follow its joins.
      const transcoder = createTranscoder({ backend, workers: 2 });
      const outDir = tempOutDir(`static-${backend}`);
      const job = {
        input: fixture("av-360p-2s.mp4"),
        outDir,
        ladder: LADDER,
        downloads: [{ rung: "144p", format: "mkv" as const }],
        staticRenditions: { mp4: ["240p"], m4a: true },
        audioVariant: true,
      };
      const result = await transcoder.transcode(job, { timeoutMs: 150_000 });
      runs.set(backend, { transcoder, outDir, result });
    }),
  );
}, 170_000);

afterAll(async () => {
  await closeMediaTools();
  for (const run of runs.values()) {
    await run.transcoder.close();
    removeDir(run.outDir);
  }
});

const file = (b: Backend, rel: string) => path.join(runs.get(b)!.outDir, rel);

describe.each(backends)("%s backend: static renditions and the audio-only variant", (backend) => {
  test("the MP4 is the rung's H.264 and AAC, its index before its media (faststart), the source's length", async () => {
    const { result } = runs.get(backend)!;
    const mp4 = result.staticFiles?.find((s) => s.kind === "mp4");
    expect(mp4).toMatchObject({ rendition: "240p", file: "static/240p.mp4" });
    expect(mp4!.sizeBytes).toBe(fs.statSync(file(backend, mp4!.file)).size);
    const probed = await ffprobeFile(file(backend, mp4!.file));
    expect(probed.formatName).toContain("mp4");
    expect(probed.streams.map((s) => [s.codec_type, s.codec_name, s.height ?? null])).toEqual([
      ["video", "h264", 240],
      ["audio", "aac", null],
    ]);
    expect(probed.duration).toBeGreaterThan(1.8);
    expect(probed.duration).toBeLessThan(2.3);
    const boxes = topLevelBoxes(file(backend, mp4!.file));
    expect(boxes.indexOf("moov")).toBeGreaterThan(-1);
    expect(boxes.indexOf("moov")).toBeLessThan(boxes.indexOf("mdat"));
  });

  test("the M4A is the audio alone, M4A brand, faststart", async () => {
    const m4a = runs.get(backend)!.result.staticFiles?.find((s) => s.kind === "m4a");
    expect(m4a).toMatchObject({ rendition: "240p", file: "static/audio.m4a" });
    const json = (await ffprobeJson(file(backend, m4a!.file), ["-show_format", "-show_streams"])) as {
      format: { duration: string; tags?: Record<string, string> };
      streams: Array<{ codec_type: string; codec_name: string }>;
    };
    expect(json.streams.map((s) => [s.codec_type, s.codec_name])).toEqual([["audio", "aac"]]);
    expect(json.format.tags?.major_brand?.trim()).toBe("M4A");
    expect(Number(json.format.duration)).toBeGreaterThan(1.8);
    const boxes = topLevelBoxes(file(backend, m4a!.file));
    expect(boxes.indexOf("moov")).toBeLessThan(boxes.indexOf("mdat"));
  });

  test("the master lists an audio-only variant last (CODECS of the audio alone), whose segments hold AAC only", async () => {
    const { result } = runs.get(backend)!;
    const variants = parseMasterPlaylist(fs.readFileSync(file(backend, result.masterPlaylist), "utf8"));
    expect(variants.map((v) => v.uri)).toEqual(["144p/index.m3u8", "240p/index.m3u8", "audio-only/index.m3u8"]);
    expect(variants.at(-1)).toMatchObject({ codecs: ["mp4a.40.2"], width: null, height: null });
    expect(variants.at(-1)!.bandwidth).toBeGreaterThan(0);
    expect(variants.slice(0, 2).every((v) => v.codecs.some((c) => c.startsWith("avc1.")))).toBe(true);
    const media = parseMediaPlaylist(fs.readFileSync(file(backend, "hls/audio-only/index.m3u8"), "utf8"));
    expect(media.endList).toBe(true);
    expect(media.totalDuration).toBeGreaterThan(1.8);
    const probed = await ffprobeFile(file(backend, path.join("hls/audio-only", media.segments[0]!.uri)));
    expect(probed.streams.map((s) => [s.codec_type, s.codec_name])).toEqual([["audio", "aac"]]);
    expect(fs.existsSync(file(backend, "hls/master-audio-only.m3u8"))).toBe(false);
    // The rungs and the download are as without the copies.
    expect(result.renditions.map((r) => [r.quality, r.download?.file ?? null])).toEqual([
      ["144p", "downloads/144p.mkv"],
      ["240p", null],
    ]);
  });
});

describe("refusals", () => {
  test("a DRM job refuses static renditions before encoding (it writes no clear media); an MP4 of a rung not produced is refused", async () => {
    const transcoder = createTranscoder({ backend: backends.at(-1)!, workers: 1 });
    const outDir = tempOutDir("static-refused");
    try {
      const base = { input: fixture("av-360p-2s.mp4"), outDir, ladder: LADDER, downloads: [] };
      const drm = { keyId: "a".repeat(32), key: "b".repeat(32) };
      const refusedDrm = await transcoder.transcode({ ...base, drm, staticRenditions: { mp4: [], m4a: true } }).catch((e) => e);
      expect(isTranscodeError(refusedDrm, hasPackager() ? "INVALID_JOB" : "PACKAGER_UNAVAILABLE")).toBe(true);
      const refusedRung = await transcoder.transcode({ ...base, staticRenditions: { mp4: ["1080p"], m4a: false } }).catch((e) => e);
      expect(isTranscodeError(refusedRung, "INVALID_JOB")).toBe(true);
      expect(fs.existsSync(path.join(outDir, "static"))).toBe(false);
    } finally {
      await transcoder.close();
      removeDir(outDir);
    }
  });
});
