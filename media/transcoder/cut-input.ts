import * as fs from "node:fs";
import * as path from "node:path";
import { classifyFfmpegFailure } from "./classify-ffmpeg-failure.ts";
import type { FfmpegRunner } from "./ffmpeg-runner.ts";
import { assertReadableFile } from "./probe-input.ts";
import { TranscodeError } from "./transcode-error.ts";
import type { CutJob } from "./types.ts";

/** The cut's file in `outDir`: Matroska holds the lossless H.264 and PCM it is made of. */
export const CUT_FILE = "cut.mkv";

/** Seconds as ffmpeg reads them, to the microsecond (no exponent for tiny values). */
const seconds = (s: number) => s.toFixed(6);

/**
 * The arguments of a frame-accurate cut of `[start, end)`: `-ss` before `-i` seeks to the keyframe before `start`
 * and, because the streams are re-encoded, decodes and drops everything before it (ffmpeg's `accurate_seek`, on by
 * default), so the first frame kept is the first one at or after `start`; `-t` ends it before `end`. Re-encoded
 * losslessly (x264 `-qp 0`, PCM audio): the ladder encodes it once more, so a clip loses no more than its parent did.
 * The first video and first audio stream are kept (either may be absent); metadata and chapters are not.
 */
export function buildCutArgs(input: string, output: string, job: Pick<CutJob, "start" | "end">): string[] {
  return [
    "-hide_banner",
    "-nostdin",
    "-y",
    "-ss",
    seconds(job.start),
    "-i",
    input,
    "-t",
    seconds(job.end - job.start),
    "-map",
    "0:v:0?",
    "-map",
    "0:a:0?",
    "-map_metadata",
    "-1",
    "-map_chapters",
    "-1",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-qp",
    "0",
    "-c:a",
    "pcm_s16le",
    output,
  ];
}

/** Cuts `[start, end)` of `job.input` into `job.outDir/cut.mkv` with whichever runner; answers the file's host path. */
export async function cutInput(runner: FfmpegRunner, job: CutJob, signal: AbortSignal): Promise<string> {
  if (!(job.start >= 0 && job.end > job.start)) throw new TranscodeError("INVALID_JOB", `a cut needs 0 <= start < end, got ${job.start}..${job.end}`);
  assertReadableFile(job.input);
  const paths = runner.toolPaths({ input: job.input, outDir: job.outDir });
  const run = await runner.run({ tool: "ffmpeg", args: buildCutArgs(paths.input, path.posix.join(paths.outDir, CUT_FILE), job), files: { input: job.input, outDir: job.outDir }, signal });
  const output = path.join(job.outDir, CUT_FILE);
  const size = fs.statSync(output, { throwIfNoEntry: false })?.size ?? 0;
  // The wasm core's exit code is not to be trusted: a cut that wrote nothing failed whatever it says.
  if (run.exitCode !== 0 || size === 0) throw classifyFfmpegFailure(run, "cut");
  return output;
}
