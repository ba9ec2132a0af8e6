/**
 * Independent checks of produced files with ffprobe/ffmpeg: the system's when
 * on PATH, else ffmpeg.wasm (media/test-support/media-tools.ts), so these tests
 * also run on a machine with only Node.js and npm.
 */
import { ffprobeJson, runFfmpeg } from "../../test-support/media-tools.ts";

export interface ProbedFile {
  formatName: string;
  duration: number;
  streams: Array<{ codec_type: string; codec_name: string; width?: number; height?: number }>;
}

export async function ffprobeFile(file: string): Promise<ProbedFile> {
  const json = (await ffprobeJson(file, ["-show_format", "-show_streams"])) as { format: { format_name: string; duration: string }; streams: ProbedFile["streams"] };
  return { formatName: json.format.format_name, duration: Number(json.format.duration), streams: json.streams };
}

export interface DecodeOutcome {
  exitCode: number;
  /** One md5 per decoded video frame, in order. */
  frameHashes: string[];
  stderr: string;
}

/** Decodes the video stream to per-frame md5s, optionally with a CENC key. */
export async function decodeVideoFrames(file: string, decryptionKey?: string): Promise<DecodeOutcome> {
  const args = ["-hide_banner", "-nostdin", "-v", "error"];
  if (decryptionKey) args.push("-decryption_key", decryptionKey);
  args.push("-i", file, "-map", "0:v:0", "-f", "framemd5", "-");
  const { exitCode, stdout, stderr } = await runFfmpeg(args, { input: file });
  const frameHashes = stdout
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => l.split(",").at(-1)!.trim());
  return { exitCode, frameHashes, stderr };
}

/** Whether the first video frame of a file is a keyframe (a segment that can start playback). */
export async function startsWithKeyframe(file: string): Promise<boolean> {
  const json = (await ffprobeJson(file, ["-select_streams", "v:0", "-read_intervals", "%+#1", "-show_entries", "frame=key_frame,pict_type"])) as {
    frames?: Array<{ key_frame: number; pict_type: string }>;
  };
  const frames = json.frames ?? [];
  return frames[0]?.key_frame === 1 && frames[0].pict_type === "I";
}
