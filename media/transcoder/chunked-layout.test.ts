/**
 * The chunked layout (wasm's, issue 29) against the native one-run layout of
 * the same job: the same playlists (media and master), the same posters and
 * downloads, and the joined renditions decode with every frame once and
 * timestamps that run on across the chunk joins (packet for packet the
 * one-run output's). Checked with the system ffprobe. The layout is
 * backend-independent (the same argument lists), so most cases run it on
 * native ffmpeg; one job and the cancel run on the wasm backend itself.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import type { RunLayout } from "./build-ffmpeg-args.ts";
import { avcCodecFromTs, planChunks } from "./chunked-runs.ts";
import { createWasmTranscoder } from "./create-wasm-transcoder.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";
import { hasPackager } from "../drm/packager-binary.ts";
import { createNativeRunner } from "./native-runner.ts";
import { runTranscodeJob } from "./run-transcode-job.ts";
import { WIDE_LADDER, fixture, removeDir, rung, tempOutDir } from "./test-support/fixtures.ts";
import { isTranscodeError } from "./transcode-error.ts";
import type { TranscodeJob, TranscodeResult } from "./types.ts";

setDefaultTimeout(240_000);

interface Done {
  outDir: string;
  result: TranscodeResult;
  labels: string[];
}
const dirs: string[] = [];

async function transcode(name: string, layout: RunLayout, job: Omit<TranscodeJob, "outDir">): Promise<Done> {
  const outDir = tempOutDir(`chunked-${name}-${layout}`);
  dirs.push(outDir);
  const native = createNativeRunner({ runLayout: layout, parallelism: 2 });
  const labels: string[] = [];
  const result = await runTranscodeJob(
    { ...job, outDir },
    {
      runner: {
        ...native,
        run: (req) => {
          if (req.tool === "ffmpeg") labels.push(req.args.includes("concat") ? "join" : req.args.includes("libx264") && req.args.some((a) => a.includes(".chunks/")) ? "chunk" : "other");
          return native.run(req);
        },
      },
      signal: new AbortController().signal,
      logger: () => {},
      transcoderId: "test",
      preset: "veryfast",
    },
  );
  return { outDir, result, labels };
}

const read = (d: Done, rel: string) => fs.readFileSync(path.join(d.outDir, rel), "utf8");

/** Every packet of a rendition's joined HLS, in order: stream, pts, dts, duration, keyframe. */
async function packets(d: Done, playlist: string): Promise<string[]> {
  const p = Bun.spawn(["ffprobe", "-v", "error", "-i", path.join(d.outDir, playlist), "-show_entries", "packet=stream_index,pts,dts,duration,flags", "-of", "csv=p=0"], { stdout: "pipe" });
  const text = await new Response(p.stdout).text();
  await p.exited;
  return text.trim().split("\n");
}

/** The playlists a player reads are the same, whatever the layout. */
function expectSamePlaylists(chunked: Done, whole: Done): void {
  expect(read(chunked, "hls/master.m3u8")).toBe(read(whole, "hls/master.m3u8"));
  for (const r of whole.result.renditions) expect(read(chunked, r.playlist)).toBe(read(whole, r.playlist));
}

describe.skipIf(!hasNativeFfmpeg())("chunked layout", () => {
  // Two small rungs (and two audio bitrates) keep the encodes cheap; the 720p source makes the decode and seeks real.
  const job = { input: fixture("av-720p-3s.mp4"), ladder: [rung(180, 150, 48), rung(360, 300, 64)], downloads: [{ rung: "360p", format: "mkv" as const }], segmentSeconds: 1, posters: true };
  const done = new Map<string, Done>();
  beforeAll(async () => {
    done.set("chunked", await transcode("720p", "chunked", job));
    done.set("one-run", await transcode("720p", "one-run", job));
  }, 300_000);
  afterAll(() => {
    for (const d of dirs) removeDir(d);
  });

  test("plans segment-aligned chunks, about two per worker", () => {
    expect(planChunks(30, 4, 2, ".chunks")?.starts).toEqual([0, 8, 16, 24]);
    expect(planChunks(3, 1, 2, ".chunks")?.starts).toEqual([0, 1, 2]);
    // A remainder under half a chunk joins the last one; one worker gains nothing.
    expect(planChunks(16.5, 4, 2, ".chunks")?.starts).toEqual([0, 8]);
    expect(planChunks(30, 4, 1, ".chunks")).toBeNull();
  });

  test("the 3 s source is encoded as 3 chunk runs and joined per rendition, with the same playlists as one run", () => {
    const [chunked, whole] = [done.get("chunked")!, done.get("one-run")!];
    expect(chunked.labels.filter((l) => l === "chunk")).toHaveLength(3);
    expect(chunked.labels.filter((l) => l === "join")).toHaveLength(2);
    expectSamePlaylists(chunked, whole);
    expect(read(chunked, "hls/master.m3u8")).toContain('CODECS="avc1.');
    expect(read(chunked, "storyboard.vtt")).toBe(read(whole, "storyboard.vtt"));
    expect(chunked.result.durationSeconds).toBe(whole.result.durationSeconds);
    // The chunks are scratch: nothing but the usual tree is left.
    expect(fs.existsSync(path.join(chunked.outDir, ".chunks"))).toBe(false);
    for (const f of ["thumbnail.jpg", "sprite.jpg", "downloads/360p.mkv"]) expect(fs.statSync(path.join(chunked.outDir, f)).size).toBeGreaterThan(0);
  });

  test("across the joins every frame is there once, and the timestamps are the one-run output's", async () => {
    const [chunked, whole] = [done.get("chunked")!, done.get("one-run")!];
    for (const r of whole.result.renditions) {
      const [a, b] = [await packets(chunked, r.playlist), await packets(whole, r.playlist)];
      const video = (rows: string[]) => rows.filter((row) => row.startsWith("0,"));
      // 25 fps x 3 s: every presentation time once, the same as one run's (x264 may order B-frames
      // differently near a join), and keyframes at the same instants.
      const pts = (rows: string[]) =>
        video(rows)
          .map((row) => Number(row.split(",")[1]))
          .sort((x, y) => x - y);
      const keys = (rows: string[]) =>
        video(rows)
          .filter((row) => row.split(",")[4]!.startsWith("K"))
          .map((row) => Number(row.split(",")[1]));
      expect(video(a)).toHaveLength(75);
      expect(pts(a)).toEqual(pts(b));
      expect(new Set(pts(a)).size).toBe(75);
      expect(keys(a)).toEqual(keys(b));
      // Decode order: dts strictly rising by one frame (3600 at 90 kHz) from first to last, across the joins.
      const dts = video(a).map((row) => Number(row.split(",")[2]));
      expect(dts.slice(1).map((t, i) => t - dts[i]!)).toEqual(Array(74).fill(3600));
      // Audio: encoded once, so the one-run output's packets at the same times (within one 90 kHz tick:
      // the priming shift is given to ffmpeg in microseconds).
      const audio = (rows: string[]) => rows.filter((row) => row.startsWith("1,")).map((row) => Number(row.split(",")[1]));
      expect(audio(a)).toHaveLength(audio(b).length);
      expect(audio(a).every((t, i) => Math.abs(t - audio(b)[i]!) <= 1)).toBe(true);
    }
  });

  test("a source shorter than one chunk: one chunk, the same playlists", async () => {
    const short = { input: fixture("av-360p-2s.mp4"), ladder: WIDE_LADDER, downloads: [], segmentSeconds: 4 };
    const chunked = await transcode("short", "chunked", short);
    const whole = await transcode("short", "one-run", short);
    expect(chunked.labels.filter((l) => l === "chunk")).toHaveLength(1);
    expect(chunked.labels.filter((l) => l === "join")).toHaveLength(1);
    expectSamePlaylists(chunked, whole);
    expect((await packets(chunked, "hls/360p/index.m3u8")).filter((row) => row.startsWith("0,"))).toHaveLength(50);
  });

  test("a video without audio joins its video alone", async () => {
    const silent = { input: fixture("video-only-2s.mp4"), ladder: WIDE_LADDER, downloads: [], segmentSeconds: 1 };
    const chunked = await transcode("silent", "chunked", silent);
    const whole = await transcode("silent", "one-run", silent);
    expectSamePlaylists(chunked, whole);
    expect(read(chunked, "hls/master.m3u8")).not.toContain("mp4a");
  });

  test.skipIf(!hasPackager())("a DRM job joins its chunks into the MP4s the packager reads: the same manifests, no clear scratch left", async () => {
    const drm = {
      input: fixture("av-360p-2s.mp4"),
      ladder: WIDE_LADDER,
      downloads: [],
      segmentSeconds: 1,
      drm: { keyId: "00112233445566778899aabbccddeeff", key: "8f3a0c1d2e4b5a697887a6b5c4d3e2f1" },
    };
    const chunked = await transcode("drm", "chunked", drm);
    const whole = await transcode("drm", "one-run", drm);
    expect(chunked.labels.filter((l) => l === "chunk")).toHaveLength(2);
    expect(chunked.result.durationSeconds).toBe(whole.result.durationSeconds);
    const segments = (d: Done) => read(d, "dash/360p.mpd").replace(/<ContentProtection[\s\S]*?<\/ContentProtection>|cenc:default_KID="[^"]*"|bandwidth="\d+"|\s(?:size|indexRange|range)="[^"]*"/g, "");
    expect(segments(chunked)).toBe(segments(whole));
    expect(fs.readdirSync(chunked.outDir).filter((f) => f.startsWith("."))).toEqual([]);
  });

  test("the codec tag comes from the first SPS of an MPEG-TS file", () => {
    expect(avcCodecFromTs(new Uint8Array(188).fill(0xff))).toBeNull();
  });
});

describe.skipIf(!hasNativeFfmpeg())("chunked layout on the wasm backend", () => {
  const t = createWasmTranscoder({ workers: 2 });
  afterAll(() => t.close());

  test("the wasm backend cuts chunks and writes the same playlists as native's one run", async () => {
    const job = { input: fixture("av-360p-2s.mp4"), ladder: WIDE_LADDER, downloads: [{ rung: "360p", format: "mkv" as const }], segmentSeconds: 1 };
    const outDir = tempOutDir("chunked-wasm");
    dirs.push(outDir);
    const progress: number[] = [];
    const events: Record<string, unknown>[] = [];
    const logged = createWasmTranscoder({ workers: 2, logger: (e) => events.push(e) });
    try {
      const result = await logged.transcode({ ...job, outDir }, { onProgress: (p) => progress.push(p) });
      const whole = await transcode("wasm-ref", "one-run", job);
      expectSamePlaylists({ outDir, result, labels: [] }, whole);
      expect(events.find((e) => e.event === "transcode.started")?.chunks).toBe(2);
      const video = (await packets({ outDir, result, labels: [] }, "hls/360p/index.m3u8")).filter((row) => row.startsWith("0,"));
      expect(video).toHaveLength(50);
      expect(progress.at(-1)).toBe(100);
      expect(progress.every((p, i) => i === 0 || p > progress[i - 1]!)).toBe(true);
    } finally {
      await logged.close();
    }
  });

  test("cancelling mid-chunk rejects with CANCELLED and leaves no chunks behind", async () => {
    const outDir = tempOutDir("chunked-wasm-cancel");
    dirs.push(outDir);
    const c = new AbortController();
    const job = t.transcode(
      { input: fixture("av-720p-3s.mp4"), outDir, ladder: WIDE_LADDER, downloads: [], segmentSeconds: 1 },
      {
        signal: c.signal,
        // The chunks stage has begun once a chunk has reported progress.
        onProgress: (p) => {
          if (p > 0 && p < 50) c.abort();
        },
      },
    );
    const error = await job.catch((e) => e);
    expect(isTranscodeError(error, "CANCELLED")).toBe(true);
    expect(fs.existsSync(path.join(outDir, ".chunks"))).toBe(false);
    expect(fs.existsSync(path.join(outDir, "hls/master.m3u8"))).toBe(false);
  });
});
