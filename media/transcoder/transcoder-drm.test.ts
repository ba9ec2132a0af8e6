/**
 * DRM jobs on both backends: the rungs encoded as usual, then packaged by the
 * real Shaka Packager into encrypted DASH, checked segment by segment with
 * ffmpeg (with and without the key).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { keyIdAsUuid } from "../drm/drm-key.ts";
import { PackagerUnavailableError } from "../drm/errors.ts";
import { CLEARKEY_SYSTEM_SCHEME, mpdProtection, mpdRepresentations } from "../drm/mpd.ts";
import { countVideoFrames, decodeSegments, expectLocked } from "../drm/test-support/dash-checks.ts";
import { closeMediaTools } from "../test-support/media-tools.ts";
import { createTranscoder } from "./create-transcoder.ts";
import { createNativeTranscoder } from "./create-native-transcoder.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";
import { directoryBytes } from "./measure-files.ts";
import { prepareDrm } from "./package-drm.ts";
import { decodeVideoFrames, ffprobeFile } from "./test-support/ffprobe-file.ts";
import { SHORT_LADDER, WIDE_LADDER, fixture, removeDir, tempOutDir } from "./test-support/fixtures.ts";
import { TranscodeError } from "./transcode-error.ts";
import type { Backend, TranscodeResult, Transcoder } from "./types.ts";

setDefaultTimeout(120_000);

const native = hasNativeFfmpeg();
const backends: Backend[] = native ? ["wasm", "native"] : ["wasm"];
const SOURCE = fixture("av-720p-3s.mp4");
const DRM = { keyId: "00112233445566778899aabbccddeeff", key: "8f3a0c1d2e4b5a697887a6b5c4d3e2f1" };

interface Run {
  transcoder: Transcoder;
  outDir: string;
  result: TranscodeResult;
  progress: number[];
  logs: Record<string, unknown>[];
}
const runs = new Map<Backend, Run>();

beforeAll(async () => {
  await Promise.all(
    backends.map(async (backend) => {
      const logs: Record<string, unknown>[] = [];
      const transcoder = createTranscoder({ backend, workers: 1, logger: (o) => logs.push(o) });
      const outDir = tempOutDir(`drm-${backend}`);
      const progress: number[] = [];
      const result = await transcoder.transcode(
        { input: SOURCE, outDir, ladder: WIDE_LADDER, downloads: [{ rung: "360p", format: "mkv" }], segmentSeconds: 1, drm: DRM },
        { onProgress: (p) => progress.push(p), timeoutMs: 90_000 },
      );
      runs.set(backend, { transcoder, outDir, result, progress, logs });
    }),
  );
}, 100_000);

afterAll(async () => {
  await closeMediaTools();
  for (const run of runs.values()) {
    await run.transcoder.close();
    removeDir(run.outDir);
  }
});

const get = (b: Backend) => runs.get(b)!;
const read = (run: Run, rel: string) => fs.readFileSync(path.join(run.outDir, rel), "utf8");

describe.each(backends)("%s backend, DRM job on av-720p-3s.mp4", (backend) => {
  test("writes dash/manifest.mpd and one .mpd per rung instead of HLS; the download asked as mkv is an encrypted MP4; no scratch left", async () => {
    const run = get(backend);
    const { result } = run;
    expect(result.masterPlaylist).toBe("dash/manifest.mpd");
    expect(result.renditions.map((r) => [r.quality, r.width, r.height, r.playlist])).toEqual([
      ["360p", 640, 360, "dash/360p.mpd"],
      ["720p", 1280, 720, "dash/720p.mpd"],
    ]);
    expect(result.hlsBytes).toBe(0);
    expect(result.drmBytes).toBe(directoryBytes(path.join(run.outDir, "dash")));
    expect(result.drmBytes).toBeGreaterThan(100_000);
    expect(result.packagingMs).toBeGreaterThan(0);
    expect(result.durationSeconds).toBeCloseTo(3, 1);
    expect(fs.readdirSync(run.outDir).sort()).toEqual(["dash", "downloads"]);

    // Issue 23: a clear Matroska beside the DASH played without any licence. A DRM job's download is CENC.
    const dl = result.renditions[0]!.download!;
    expect(dl).toMatchObject({ file: "downloads/360p.mp4", format: "mp4-encrypted" });
    expect(dl.password).toMatch(/^[0-9a-f]{32}$/);
    expect(dl.password).not.toBe(DRM.key);
    expect(fs.readdirSync(path.join(run.outDir, "downloads"))).toEqual(["360p.mp4"]);
    expect(result.downloadBytes).toBe(dl.sizeBytes);
    const probed = await ffprobeFile(path.join(run.outDir, dl.file));
    expect(probed.streams.map((s) => s.codec_name).sort()).toEqual(["aac", "h264"]);
    expect(probed.duration).toBeCloseTo(3, 0);
    // Its frames come out with the password and not without it.
    const file = path.join(run.outDir, dl.file);
    const withKey = await decodeVideoFrames(file, dl.password!);
    expect([withKey.exitCode, withKey.frameHashes.length]).toEqual([0, 75]);
    const real = new Set(withKey.frameHashes);
    const without = await decodeVideoFrames(file);
    expect(without.frameHashes.length).toBeLessThan(real.size / 3);
    expect(without.frameHashes.filter((h) => real.has(h))).toEqual([]);
  }, 120_000);

  test("the MPD is static and protected: cenc:default_KID is the key id, the ClearKey system named on every set", () => {
    const run = get(backend);
    const mpd = read(run, run.result.masterPlaylist);
    expect(mpd).toMatch(/<MPD\b[^>]*type="static"/);
    const p = mpdProtection(mpd);
    // One key per video, for video and audio: every AdaptationSet names the same key id.
    expect(p.defaultKids).toEqual([keyIdAsUuid(DRM.keyId), keyIdAsUuid(DRM.keyId)]);
    expect(p.schemes.filter((s) => s === CLEARKEY_SYSTEM_SCHEME)).toHaveLength(2);
    expect(mpdRepresentations(mpd).map((r) => [r.rendition, r.contentType])).toEqual([
      ["360p", "video"],
      ["720p", "video"],
      ["360p", "audio"],
      ["720p", "audio"],
    ]);
  });

  test("each rung's own MPD names only that rung (its video and its audio), with the same protection", () => {
    const run = get(backend);
    for (const r of run.result.renditions) {
      const mpd = read(run, r.playlist);
      expect(mpdRepresentations(mpd).map((x) => [x.rendition, x.contentType])).toEqual([
        [r.quality, "video"],
        [r.quality, "audio"],
      ]);
      expect(mpd).toContain(`maxWidth="${r.width}"`);
      expect(mpdProtection(mpd).defaultKids).toEqual([keyIdAsUuid(DRM.keyId), keyIdAsUuid(DRM.keyId)]);
      expect(mpdProtection(mpd).schemes).toContain(CLEARKEY_SYSTEM_SCHEME);
    }
  });

  test("every segment decrypts alone with the key and the video adds up to the source's frames; none decodes without it", async () => {
    const run = get(backend);
    const dash = path.join(run.outDir, "dash");
    const sourceFrames = await countVideoFrames(SOURCE);
    expect(sourceFrames).toBe(75);
    for (const rep of mpdRepresentations(read(run, run.result.masterPlaylist))) {
      const clear = await decodeSegments(dash, rep, DRM.key);
      expect(clear.map((s) => s.segment)).toEqual([1, 2, 3].map((n) => `${rep.contentType}-0000${n}.m4s`));
      for (const s of clear) {
        expect([s.segment, s.exitCode, s.stderr]).toEqual([s.segment, 0, ""]);
        expect(s.hashes.length).toBeGreaterThan(0);
      }
      if (rep.contentType === "video") expect(clear.map((s) => s.hashes.length)).toEqual([25, 25, 25]);
      if (rep.contentType === "video") expect(clear.reduce((n, s) => n + s.hashes.length, 0)).toBe(sourceFrames);
      expectLocked(await decodeSegments(dash, rep), clear, rep.contentType);
    }
  }, 120_000);

  test("progress ends at exactly 100; the key is in no log entry", () => {
    const { progress, logs } = get(backend);
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(100);
    expect(progress.filter((p) => p === 100)).toHaveLength(1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThan(progress[i - 1]!);
    expect(logs.find((l) => l.event === "transcode.started")).toMatchObject({ drm: true });
    expect(logs.find((l) => l.event === "transcode.finished")).toMatchObject({ hlsBytes: 0 });
    expect(JSON.stringify(logs)).not.toContain(DRM.key);
  });
});

describe.each(backends)("%s backend, DRM jobs of audio-only and video-only sources", (backend) => {
  test("audio-only: one 'audio' rendition, an audio-only MPD, segments decrypt", async () => {
    const outDir = tempOutDir(`drm-audio-${backend}`);
    try {
      const result = await get(backend).transcoder.transcode({ input: fixture("audio-only-2s.m4a"), outDir, ladder: SHORT_LADDER, downloads: [], segmentSeconds: 1, drm: DRM });
      expect(result.renditions.map((r) => [r.quality, r.playlist])).toEqual([["audio", "dash/audio.mpd"]]);
      const reps = mpdRepresentations(fs.readFileSync(path.join(outDir, "dash/manifest.mpd"), "utf8"));
      expect(reps.map((r) => [r.rendition, r.contentType])).toEqual([["audio", "audio"]]);
      const clear = await decodeSegments(path.join(outDir, "dash"), reps[0]!, DRM.key);
      expect(clear.length).toBeGreaterThanOrEqual(2);
      for (const s of clear) expect([s.exitCode, s.stderr, s.hashes.length > 0]).toEqual([0, "", true]);
    } finally {
      removeDir(outDir);
    }
  }, 120_000);

  test("video-only: video representations only, frames add up", async () => {
    const outDir = tempOutDir(`drm-video-${backend}`);
    try {
      const result = await get(backend).transcoder.transcode({ input: fixture("video-only-2s.mp4"), outDir, ladder: [SHORT_LADDER[0]!], downloads: [], segmentSeconds: 1, drm: DRM });
      expect(result.renditions.map((r) => r.playlist)).toEqual(["dash/144p.mpd"]);
      const reps = mpdRepresentations(fs.readFileSync(path.join(outDir, "dash/144p.mpd"), "utf8"));
      expect(reps.map((r) => [r.rendition, r.contentType])).toEqual([["144p", "video"]]);
      const clear = await decodeSegments(path.join(outDir, "dash"), reps[0]!, DRM.key);
      expect(clear.reduce((n, s) => n + s.hashes.length, 0)).toBe(await countVideoFrames(fixture("video-only-2s.mp4")));
    } finally {
      removeDir(outDir);
    }
  }, 120_000);
});

describe.skipIf(!native)("wasm and native agree on DRM jobs", () => {
  test("same file tree and result shape", () => {
    const w = get("wasm");
    const n = get("native");
    const tree = (dir: string) => (fs.readdirSync(dir, { recursive: true }) as string[]).sort();
    expect(tree(w.outDir)).toEqual(tree(n.outDir));
    const strip = (r: TranscodeResult) => ({
      ...r,
      drmBytes: 0,
      packagingMs: 0,
      downloadBytes: 0,
      renditions: r.renditions.map((x) => ({ ...x, download: x.download && { ...x.download, sizeBytes: 0, password: !!x.download.password } })),
    });
    expect(strip(w.result)).toEqual(strip(n.result));
  });
});

describe("DRM job failures", () => {
  test("a key that is not 32 hex digits is INVALID_JOB, without echoing it, before any work", async () => {
    const t = createTranscoder({ backend: native ? "native" : "wasm", workers: 1 });
    const outDir = tempOutDir("drm-badkey");
    try {
      const err = await t.transcode({ input: SOURCE, outDir, ladder: SHORT_LADDER, downloads: [], drm: { keyId: DRM.keyId, key: "not-a-key-at-all" } }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TranscodeError);
      expect((err as TranscodeError).code).toBe("INVALID_JOB");
      expect((err as TranscodeError).message).not.toContain("not-a-key-at-all");
      expect(fs.readdirSync(outDir)).toEqual([]);
    } finally {
      await t.close();
      removeDir(outDir);
    }
  });

  test("without a packager binary a DRM job is PACKAGER_UNAVAILABLE, naming what is missing", () => {
    const missing = () => {
      throw new PackagerUnavailableError("DRM packaging needs Shaka Packager: npm shaka-packager has no executable binary for sunos-x64 (or is not installed)");
    };
    const err = (() => {
      try {
        prepareDrm(DRM, missing);
      } catch (e) {
        return e;
      }
    })() as TranscodeError;
    expect(err).toBeInstanceOf(TranscodeError);
    expect(err.code).toBe("PACKAGER_UNAVAILABLE");
    expect(err.message).toContain("shaka-packager");
  });

  test.skipIf(!native)(
    "cancelling or timing out a DRM job stops it and removes the clear intermediates",
    async () => {
      const slow = createNativeTranscoder({ preset: "placebo" });
      const outDir = tempOutDir("drm-cancel");
      try {
        const job = { input: fixture("live-360p-6s.flv"), outDir, ladder: SHORT_LADDER, downloads: [], drm: DRM };
        const c = new AbortController();
        const cancelled = slow.transcode(job, { signal: c.signal }).catch((e: unknown) => e);
        // The encode is under way once its clear scratch folder exists (a loaded machine takes longer to get there).
        const scratchAppeared = async () => {
          for (const until = Date.now() + 10_000; Date.now() < until; await Bun.sleep(25)) {
            if (fs.readdirSync(outDir).some((n) => n.startsWith(".drm-scratch-"))) return true;
          }
          return false;
        };
        expect(await scratchAppeared()).toBe(true);
        c.abort();
        expect(((await cancelled) as TranscodeError).code).toBe("CANCELLED");
        expect(fs.readdirSync(outDir).filter((n) => n.startsWith(".drm-scratch-"))).toEqual([]);

        const timedOut = (await slow.transcode(job, { timeoutMs: 300 }).catch((e: unknown) => e)) as TranscodeError;
        expect(timedOut.code).toBe("TIMEOUT");
        expect(fs.readdirSync(outDir).filter((n) => n.startsWith(".drm-scratch-"))).toEqual([]);
      } finally {
        await slow.close();
        removeDir(outDir);
      }
    },
    120_000,
  );
});
