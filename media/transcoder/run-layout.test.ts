/**
 * Native ffmpeg runs a job's whole ladder in one process (`one-run`: one
 * decode split to every rung); the wasm backend keeps one run per rendition.
 * The same job through both layouts must write the same tree: same files,
 * same variants, same segments cut at the same instants, same posters and
 * downloads. Checked with the system ffprobe.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseMasterPlaylist, parseMediaPlaylist } from "./hls-playlist.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";
import { createNativeRunner } from "./native-runner.ts";
import { runTranscodeJob } from "./run-transcode-job.ts";
import { ffprobeFile } from "./test-support/ffprobe-file.ts";
import { WIDE_LADDER, fixture, removeDir, tempOutDir } from "./test-support/fixtures.ts";
import type { RunLayout } from "./build-ffmpeg-args.ts";
import type { TranscodeResult } from "./types.ts";

setDefaultTimeout(120_000);

const input = fixture("av-720p-3s.mp4");
interface Done {
  outDir: string;
  result: TranscodeResult;
  /** Argument lists of the ffmpeg runs that read the source. */
  decodes: string[][];
}
const done = new Map<RunLayout, Done>();

async function transcode(layout: RunLayout): Promise<Done> {
  const outDir = tempOutDir(`layout-${layout}`);
  const native = createNativeRunner({ runLayout: layout });
  const decodes: string[][] = [];
  const result = await runTranscodeJob(
    { input, outDir, ladder: WIDE_LADDER, downloads: [{ rung: "720p", format: "mkv" }], segmentSeconds: 2, posters: true },
    {
      runner: {
        ...native,
        run: (req) => {
          if (req.tool === "ffmpeg" && req.args.includes(input)) decodes.push(req.args);
          return native.run(req);
        },
      },
      signal: new AbortController().signal,
      logger: () => {},
      transcoderId: "test",
      preset: "veryfast",
    },
  );
  return { outDir, result, decodes };
}

const tree = (dir: string) => [...new Bun.Glob("**/*").scanSync({ cwd: dir })].sort();

describe.skipIf(!hasNativeFfmpeg())("native run layouts", () => {
  beforeAll(async () => {
    for (const layout of ["one-run", "per-rendition"] as const) done.set(layout, await transcode(layout));
  }, 60_000);
  afterAll(() => {
    for (const d of done.values()) removeDir(d.outDir);
  });

  test("the native default decodes the source once for the whole ladder", () => {
    expect(createNativeRunner().runLayout).toBe("one-run");
    expect(done.get("one-run")!.decodes).toHaveLength(1);
    expect(done.get("per-rendition")!.decodes).toHaveLength(2);
  });

  test("both layouts write the same files: playlists, segments, download, posters", () => {
    const one = done.get("one-run")!;
    const per = done.get("per-rendition")!;
    expect(tree(one.outDir)).toEqual(tree(per.outDir));
    expect(tree(one.outDir)).toEqual(
      expect.arrayContaining(["hls/master.m3u8", "hls/360p/index.m3u8", "hls/720p/seg-00001.ts", "downloads/720p.mkv", "thumbnail.jpg", "sprite.jpg", "storyboard.vtt"]),
    );
    expect(fs.readFileSync(path.join(one.outDir, "storyboard.vtt"), "utf8")).toBe(fs.readFileSync(path.join(per.outDir, "storyboard.vtt"), "utf8"));
    const strip = (r: TranscodeResult) => ({
      ...r,
      hlsBytes: 0,
      downloadBytes: 0,
      renditions: r.renditions.map((x) => ({ ...x, download: x.download && { ...x.download, sizeBytes: 0 } })),
      posters: r.posters && { ...r.posters, bytes: 0 },
    });
    expect(strip(one.result)).toEqual(strip(per.result));
  });

  test("same variants, and each rung's segments have the same durations and sizes", async () => {
    const [one, per] = [done.get("one-run")!, done.get("per-rendition")!];
    const variants = (d: Done) => parseMasterPlaylist(fs.readFileSync(path.join(d.outDir, "hls/master.m3u8"), "utf8")).map((v) => [v.uri, v.width, v.height, v.codecs]);
    expect(variants(one)).toEqual(variants(per));
    for (const r of one.result.renditions) {
      const media = (d: Done) => parseMediaPlaylist(fs.readFileSync(path.join(d.outDir, r.playlist), "utf8"));
      expect(media(one).segments.map((s) => [s.uri, s.duration])).toEqual(media(per).segments.map((s) => [s.uri, s.duration]));
      for (const s of media(one).segments) {
        const probed = await ffprobeFile(path.join(one.outDir, path.dirname(r.playlist), s.uri));
        const v = probed.streams.find((x) => x.codec_type === "video")!;
        expect([v.codec_name, v.width, v.height]).toEqual(["h264", r.width, r.height]);
      }
    }
  });
});
