import * as fs from "node:fs";
import type { FfmpegRunner } from "./ffmpeg-runner.ts";
import { buildProbeArgs, parseFfprobeJson } from "./parse-ffprobe.ts";
import { TranscodeError } from "./transcode-error.ts";
import type { ProbeResult } from "./types.ts";

/** Probes with whichever runner; both backends share args and parsing. */
export async function probeInput(runner: FfmpegRunner, input: string, signal: AbortSignal): Promise<ProbeResult> {
  assertReadableFile(input);
  const paths = runner.toolPaths({ input, outDir: "/" });
  // ffprobe's exit code is useless on wasm (always -1), so the JSON decides.
  const out = await runner.run({ tool: "ffprobe", args: buildProbeArgs(paths.input), files: { input }, signal });
  return parseFfprobeJson(out.stdout, out.stderrTail);
}

export function assertReadableFile(input: string): void {
  if (!input.startsWith("/")) throw new TranscodeError("INVALID_JOB", `input must be an absolute path: ${input}`);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(input);
  } catch {
    throw new TranscodeError("INPUT_UNSUPPORTED", `input does not exist: ${input}`);
  }
  if (!stat.isFile()) throw new TranscodeError("INPUT_UNSUPPORTED", `input is not a file: ${input}`);
  if (stat.size === 0) throw new TranscodeError("INPUT_UNSUPPORTED", `input is empty: ${input}`);
}
