/**
 * The one place ffmpeg command lines are built. Both backends run exactly
 * these lists; they differ only in the paths they pass in (host paths for
 * native, mount points for wasm), which is why paths are parameters.
 */
import { posix } from "node:path";
import type { DownloadFormat } from "./types.ts";

export interface PlannedRendition {
  /** Directory and label, e.g. '360p', or 'audio' for the audio-only rendition. */
  name: string;
  /** 0 for audio-only. */
  width: number;
  /** 0 for audio-only. */
  height: number;
  videoBitrateKbps: number;
  audioBitrateKbps: number;
}

export interface EncodePlan {
  renditions: PlannedRendition[];
  hasVideo: boolean;
  hasAudio: boolean;
  segmentSeconds: number;
  frameRate: number | null;
  preset: string;
}

/** Where the tool sees the job's files. */
export interface ToolPaths {
  input: string;
  outDir: string;
}

export interface PlannedDownloadFile {
  rendition: string;
  format: DownloadFormat;
  /** Relative to outDir. */
  file: string;
  /** 32 hex digits, for 'mp4-encrypted' only. */
  key?: string;
  /** 32 hex digits, for 'mp4-encrypted' only. */
  kid?: string;
}

export const HLS_DIR = "hls";
export const DOWNLOADS_DIR = "downloads";
export const MASTER_PLAYLIST = "master.m3u8";
export const MEDIA_PLAYLIST = "index.m3u8";

const COMMON = ["-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-nostats", "-progress", "pipe:1"];

export function mediaPlaylistPath(rendition: string): string {
  return posix.join(HLS_DIR, rendition, MEDIA_PLAYLIST);
}

export function downloadFileName(rendition: string, format: DownloadFormat): string {
  return posix.join(DOWNLOADS_DIR, `${rendition}.${format === "mkv" ? "mkv" : "mp4"}`);
}

/** Name of the master playlist one rendition's run writes next to the real one; merged, then deleted. */
export function partialMasterName(rendition: string): string {
  return `master-${rendition}.m3u8`;
}

/**
 * One independent ffmpeg command of a job. Both backends run exactly these
 * lists; how many run at once is the backend's business.
 */
export interface PlannedRun {
  /** For logs and errors: the rendition's name, or 'downloads'. */
  label: string;
  args: string[];
  /** Whether the command reads the source (else only files under outDir). */
  readsInput: boolean;
  /** Relative cost within its stage, for progress: output pixels (1 for audio-only). */
  weight: number;
}

/** Runs that only depend on earlier stages, so they may run concurrently. */
export interface RunStage {
  kind: "hls" | "downloads";
  runs: PlannedRun[];
}

/**
 * Every ffmpeg command of a job, in dependency order: one HLS run per
 * rendition (each decodes the source on its own, so they are independent),
 * then, after the master playlist is merged, one run for all downloads.
 */
export function buildJobRuns(plan: EncodePlan, downloads: PlannedDownloadFile[], paths: ToolPaths): RunStage[] {
  const stages: RunStage[] = [
    {
      kind: "hls",
      runs: plan.renditions.map((r) => ({
        label: r.name,
        args: buildRenditionHlsArgs(plan, r, paths),
        readsInput: true,
        weight: Math.max(1, r.width * r.height),
      })),
    },
  ];
  if (downloads.length > 0) stages.push({ kind: "downloads", runs: [{ label: "downloads", args: buildDownloadArgs(downloads, paths), readsInput: false, weight: 1 }] });
  return stages;
}

/**
 * One rendition's HLS run: scale to the rung, H.264 + AAC, one HLS variant.
 * Keyframe placement depends only on time (fixed GOP, no scene cuts, forced
 * keyframes every segment), so separate runs are cut at the same instants.
 * The variant keeps its `%v` paths and its own master playlist
 * (`partialMasterName`), which the job merges into `master.m3u8`: the files
 * are the ones a single `-var_stream_map` run of the whole ladder writes.
 */
export function buildRenditionHlsArgs(plan: EncodePlan, rendition: PlannedRendition, paths: ToolPaths): string[] {
  const { hasAudio, segmentSeconds } = plan;
  const video = plan.hasVideo && rendition.height > 0;
  const args = [...COMMON, "-i", paths.input];

  if (video) {
    args.push("-filter_complex", `[0:v:0]scale=${rendition.width}:${rendition.height},setsar=1[v0]`, "-map", "[v0]");
    if (hasAudio) args.push("-map", "0:a:0");
  } else {
    args.push("-map", "0:a:0");
  }

  if (video) {
    const kbps = rendition.videoBitrateKbps;
    args.push("-c:v", "libx264", "-preset", plan.preset, "-profile:v", "main", "-pix_fmt", "yuv420p");
    args.push("-b:v:0", `${kbps}k`, "-maxrate:v:0", `${Math.round(kbps * 1.1)}k`, "-bufsize:v:0", `${kbps * 2}k`);
    // Segments may only be cut at keyframes, and players switch rungs at
    // segment boundaries: every rung gets a keyframe at exactly the same
    // timestamps (forced by time, which also holds for variable frame rate),
    // and scene-cut keyframes are disabled so GOPs stay fixed.
    if (plan.frameRate && plan.frameRate > 0) {
      const gop = Math.max(1, Math.round(plan.frameRate * segmentSeconds));
      args.push("-g", String(gop), "-keyint_min", String(gop));
    }
    args.push("-sc_threshold", "0", "-force_key_frames", `expr:gte(t,n_forced*${segmentSeconds})`);
  }
  if (hasAudio) args.push("-c:a", "aac", "-ac", "2", "-b:a:0", `${rendition.audioBitrateKbps}k`);

  const hlsDir = posix.join(paths.outDir, HLS_DIR);
  args.push(
    "-max_muxing_queue_size",
    "1024",
    "-f",
    "hls",
    "-hls_time",
    String(segmentSeconds),
    "-hls_playlist_type",
    "vod",
    "-hls_segment_type",
    "mpegts",
    "-hls_flags",
    "independent_segments",
    "-hls_segment_filename",
    posix.join(hlsDir, "%v", "seg-%05d.ts"),
    "-master_pl_name",
    partialMasterName(rendition.name),
    "-var_stream_map",
    `${video ? (hasAudio ? "v:0,a:0" : "v:0") : "a:0"},name:${rendition.name}`,
    posix.join(hlsDir, "%v", MEDIA_PLAYLIST),
  );
  return args;
}

/**
 * One run for all downloads: each is a stream copy of its rendition's HLS
 * output (no second encode), remuxed to Matroska or to CENC-encrypted MP4.
 */
export function buildDownloadArgs(downloads: PlannedDownloadFile[], paths: Pick<ToolPaths, "outDir">): string[] {
  const args = [...COMMON];
  for (const d of downloads) args.push("-i", posix.join(paths.outDir, mediaPlaylistPath(d.rendition)));
  downloads.forEach((d, i) => {
    args.push("-map", `${i}:v?`, "-map", `${i}:a?`, "-c", "copy");
    if (d.format === "mkv") {
      args.push("-f", "matroska");
    } else {
      if (!d.key || !d.kid) throw new Error(`encrypted download for ${d.rendition} needs key and kid`);
      args.push("-encryption_scheme", "cenc-aes-ctr", "-encryption_key", d.key, "-encryption_kid", d.kid, "-movflags", "+faststart", "-f", "mp4");
    }
    args.push(posix.join(paths.outDir, d.file));
  });
  return args;
}
