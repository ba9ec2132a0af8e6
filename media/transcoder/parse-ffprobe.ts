import { TranscodeError } from "./transcode-error.ts";
import type { ProbeResult } from "./types.ts";

/** Arguments for `ffprobe` (native and wasm alike); the JSON goes to stdout. */
export function buildProbeArgs(input: string): string[] {
  return ["-v", "error", "-of", "json", "-show_format", "-show_streams", input];
}

interface FfprobeStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  sample_aspect_ratio?: string;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  duration?: string;
  sample_rate?: string;
  disposition?: { attached_pic?: number };
  tags?: { rotate?: string };
  side_data_list?: Array<{ rotation?: number }>;
}

interface FfprobeJson {
  streams?: FfprobeStream[];
  format?: { format_name?: string; duration?: string };
}

/**
 * Turns ffprobe's JSON into a ProbeResult, or throws INPUT_UNSUPPORTED when
 * the file has no decodable audio or video. `stderr` is only used to explain.
 */
export function parseFfprobeJson(stdout: string, stderr: string[] = []): ProbeResult {
  let json: FfprobeJson;
  try {
    json = JSON.parse(stdout || "{}") as FfprobeJson;
  } catch {
    throw new TranscodeError("INPUT_UNSUPPORTED", "ffprobe printed no readable JSON", stderr);
  }
  const streams = json.streams ?? [];
  // Cover art in audio files is a "video" stream of one picture, not a video.
  const video = streams.find((s) => s.codec_type === "video" && !s.disposition?.attached_pic);
  const audio = streams.find((s) => s.codec_type === "audio");
  if (!json.format || (!video && !audio)) {
    const why = stderr.find((l) => l.trim() !== "") ?? "no audio or video stream";
    throw new TranscodeError("INPUT_UNSUPPORTED", `input is not supported media: ${why.trim()}`, stderr);
  }

  let width = positive(video?.width);
  let height = positive(video?.height);
  const sar = ratio(video?.sample_aspect_ratio, ":");
  if (width !== null && sar !== null && sar > 0 && sar !== 1) width = Math.round(width * sar);
  if (width !== null && height !== null && Math.abs(rotation(video) % 180) === 90) [width, height] = [height, width];

  // The container's duration is authoritative; streams only fill in for raw or odd containers.
  const formatDuration = Number(json.format.duration);
  const streamDurations = streams.map((s) => Number(s.duration)).filter((d) => Number.isFinite(d) && d > 0);
  const durationSeconds = Number.isFinite(formatDuration) && formatDuration > 0 ? formatDuration : streamDurations.length > 0 ? Math.max(...streamDurations) : null;
  return {
    durationSeconds,
    width,
    height,
    hasVideo: video !== undefined,
    hasAudio: audio !== undefined,
    videoCodec: video?.codec_name ?? null,
    audioCodec: audio?.codec_name ?? null,
    formatName: json.format.format_name ?? null,
    frameRate: video ? (ratio(video.avg_frame_rate, "/") ?? ratio(video.r_frame_rate, "/")) : null,
    audioSampleRate: positive(Number(audio?.sample_rate)),
  };
}

function positive(n: number | undefined): number | null {
  return typeof n === "number" && n > 0 ? n : null;
}

function ratio(s: string | undefined, sep: string): number | null {
  if (!s) return null;
  const [a, b] = s.split(sep).map(Number);
  if (!a || !b || !Number.isFinite(a / b)) return null;
  return a / b;
}

function rotation(s: FfprobeStream | undefined): number {
  const fromSide = s?.side_data_list?.find((d) => typeof d.rotation === "number")?.rotation;
  if (typeof fromSide === "number") return fromSide;
  const tag = Number(s?.tags?.rotate);
  return Number.isFinite(tag) ? tag : 0;
}
