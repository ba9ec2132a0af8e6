/**
 * The one place ffmpeg command lines are built. Both backends run exactly
 * these lists; they differ only in the paths they pass in (host paths for
 * native, mount points for wasm), which is why paths are parameters.
 */
import { posix } from "node:path";
import { posterFilters, posterOutputArgs, type PosterPlan } from "./posters.ts";
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
  /**
   * DRM jobs: encode each rendition into `<mp4Dir>/<name>.mp4` (relative to
   * outDir) for Shaka Packager instead of writing HLS. Unset: HLS.
   */
  mp4Dir?: string;
  /**
   * Thumbnail and storyboard sprite (posters.ts), made by the run of this
   * rendition (the cheapest one) from the frames it decodes anyway. Unset: none.
   */
  posters?: { plan: PosterPlan; rendition: string };
  /**
   * x264 frame threads per encoder (`-threads:v`); unset: x264's automatic
   * count (1.5 x cores). The native one-run layout sets 3 x cores: all rungs
   * share one ffmpeg main thread that waits on each encoder in turn, and more
   * frames in flight keep the cores busy (README, "Native concurrency").
   */
  x264Threads?: number;
  /** The source's audio sample rate (probe), for the chunked layout's audio join (chunked-runs.ts). */
  audioSampleRate?: number | null;
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
/** Encrypted DASH of a DRM job (written by media/drm, not by ffmpeg). */
export const DASH_DIR = "dash";
/** Scratch directory of a DRM job's intermediate MP4s (clear media): a random suffix, removed at the end of the job. */
export const DRM_SCRATCH_PREFIX = ".drm-scratch-";

export const COMMON = ["-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-nostats", "-progress", "pipe:1"];

export function mediaPlaylistPath(rendition: string): string {
  return posix.join(HLS_DIR, rendition, MEDIA_PLAYLIST);
}

export function downloadFileName(rendition: string, format: DownloadFormat): string {
  return posix.join(DOWNLOADS_DIR, `${rendition}.${format === "mkv" ? "mkv" : "mp4"}`);
}

/** A DRM job's intermediate MP4 of one rendition, relative to outDir. */
export function scratchMp4Path(mp4Dir: string, rendition: string): string {
  return posix.join(mp4Dir, `${rendition}.mp4`);
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
  /** Media seconds the run's `out_time` reaches (a chunk's length); unset: the source's duration. */
  seconds?: number;
}

/** Runs that only depend on earlier stages, so they may run concurrently. */
export interface RunStage {
  /** `mp4`: a DRM job's per-rendition encodes, packaged afterwards. `chunks`: the chunked layout's parallel encodes (chunked-runs.ts), joined by the `hls`/`mp4` stage after them. */
  kind: "chunks" | "hls" | "mp4" | "downloads";
  runs: PlannedRun[];
  /** Share of the progress bar; unset: the job's default for the kind. */
  progressWeight?: number;
}

/**
 * How a job's renditions are split into encode runs. `per-rendition`: one
 * run each (each decodes the source on its own; independent, so a wasm job
 * spreads them over several single-threaded workers). `one-run`: a single
 * run decodes the source once and `split`s it to every rung's scaler,
 * encoder and muxer (native ffmpeg: x264 is multi-threaded, so one process
 * already uses every core, and the repeated decodes were pure overhead).
 * `chunked` (chunked-runs.ts): the source is cut into segment-aligned time
 * chunks encoded in parallel (each run decodes its chunk once for every
 * rung), the audio in one more run, then each rendition is joined by a
 * stream copy into its HLS (or MP4). All three write the same playlists.
 */
export type RunLayout = "per-rendition" | "one-run" | "chunked";

/**
 * Every ffmpeg command of a job, in dependency order: the encode stage (HLS,
 * or for a DRM job, `plan.mp4Dir`, MP4s with the same encoder arguments,
 * packaged by the job afterwards), then one copy run for all downloads, static
 * renditions and the audio variant (after the master playlist is merged).
 */
export function buildJobRuns(plan: EncodePlan, downloads: PlannedDownloadFile[], paths: ToolPaths, layout: RunLayout = "per-rendition", extras: CopyExtras = NO_EXTRAS): RunStage[] {
  const groups = layout === "one-run" ? [plan.renditions] : plan.renditions.map((r) => [r]);
  const stages: RunStage[] = [
    {
      kind: plan.mp4Dir ? "mp4" : "hls",
      runs: groups.map((rs) => ({
        label: rs.map((r) => r.name).join("+"),
        args: buildRenditionsArgs(plan, rs, paths),
        readsInput: true,
        weight: rs.reduce((sum, r) => sum + Math.max(1, r.width * r.height), 0),
      })),
    },
  ];
  return [...stages, ...copyStages(plan, downloads, extras, paths)];
}

/**
 * One run of some renditions: the source decoded once, each rendition's
 * encode (`buildEncodeArgs`) and its muxer, HLS or (`plan.mp4Dir`) MP4.
 * ffmpeg options belong to the next output file named, so each rendition's
 * arguments are a complete output of their own.
 */
export function buildRenditionsArgs(plan: EncodePlan, renditions: PlannedRendition[], paths: ToolPaths): string[] {
  const args = buildInputArgs(plan, renditions, paths);
  renditions.forEach((r, i) => {
    args.push(...buildEncodeArgs(plan, r, i));
    args.push(...(plan.mp4Dir ? mp4MuxerArgs(r, paths, plan.mp4Dir) : hlsMuxerArgs(plan, r, paths)));
  });
  return args;
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
  return buildRenditionsArgs({ ...plan, mp4Dir: undefined }, [rendition], paths);
}

/**
 * A DRM job's run for one rendition: the same encode as its HLS run, into a
 * plain MP4 that Shaka Packager segments at the forced keyframes and
 * encrypts. Plain (moov at the end, no faststart rewrite): the packager reads
 * it from disk and seeks.
 */
export function buildRenditionMp4Args(plan: EncodePlan, rendition: PlannedRendition, paths: ToolPaths, mp4Dir: string): string[] {
  return buildRenditionsArgs({ ...plan, mp4Dir }, [rendition], paths);
}

export function hlsMuxerArgs(plan: Pick<EncodePlan, "hasVideo" | "hasAudio" | "segmentSeconds">, rendition: PlannedRendition, paths: Pick<ToolPaths, "outDir">): string[] {
  const video = plan.hasVideo && rendition.height > 0;
  const hlsDir = posix.join(paths.outDir, HLS_DIR);
  return [
    "-max_muxing_queue_size",
    "1024",
    "-f",
    "hls",
    "-hls_time",
    String(plan.segmentSeconds),
    // Issue 29 item 1: an EVENT playlist that grows while the encode runs (made VOD at the end of the stage,
    // early-hls.ts), each segment written under a temporary name and renamed before the playlist lists it.
    "-hls_playlist_type",
    "event",
    "-hls_segment_type",
    "mpegts",
    "-hls_flags",
    "independent_segments+temp_file",
    "-hls_segment_filename",
    posix.join(hlsDir, "%v", "seg-%05d.ts"),
    "-master_pl_name",
    partialMasterName(rendition.name),
    "-var_stream_map",
    `${video ? (plan.hasAudio ? "v:0,a:0" : "v:0") : "a:0"},name:${rendition.name}`,
    posix.join(hlsDir, "%v", MEDIA_PLAYLIST),
  ];
}

export function mp4MuxerArgs(rendition: PlannedRendition, paths: ToolPaths, mp4Dir: string): string[] {
  return ["-max_muxing_queue_size", "1024", "-f", "mp4", posix.join(paths.outDir, scratchMp4Path(mp4Dir, rendition.name))];
}

/**
 * The input and the one filter graph of a run: the decoded video split into
 * one scaler per rendition (output `[v<i>]`) plus, when the posters'
 * rendition is among them, the thumbnail and sprite branches, whose image
 * outputs come first (posters.ts). A single rendition without posters needs
 * no split.
 */
function buildInputArgs(plan: EncodePlan, renditions: PlannedRendition[], paths: ToolPaths): string[] {
  const args = [...COMMON, "-i", paths.input];
  const video = renditions.filter((r) => plan.hasVideo && r.height > 0);
  if (video.length === 0) return args;
  const scale = scaleFilter;
  const posters = plan.posters && renditions.some((r) => r.name === plan.posters!.rendition) ? plan.posters.plan : null;
  if (!posters && video.length === 1) return [...args, "-filter_complex", `[0:v:0]${scale(video[0]!, 0)}`];
  // One decode feeds every rung (and the two images).
  const branch = (i: number) => (video.length === 1 ? "vmain" : `vmain${i}`);
  const outs = [...video.map((_, i) => `[${branch(i)}]`), ...(posters ? ["[vthumb]", "[vsprite]"] : [])];
  const graph = [`[0:v:0]split=${outs.length}${outs.join("")}`, ...video.map((r, i) => `[${branch(i)}]${scale(r, i)}`)];
  if (posters) graph.push(...posterFilters(posters, "vthumb", "vsprite"));
  args.push("-filter_complex", graph.join(";"));
  if (posters) args.push(...posterOutputArgs(paths.outDir));
  return args;
}

/** A rung's scaler, output `[v<i>]`. */
export function scaleFilter(r: PlannedRendition, i: number): string {
  return `scale=${r.width}:${r.height},setsar=1[v${i}]`;
}

/** One rendition's output streams (its scaled video `[v<index>]` and the source's audio), H.264 + AAC and keyframe placement: everything before its muxer. */
export function buildEncodeArgs(plan: EncodePlan, rendition: PlannedRendition, index: number): string[] {
  const { hasAudio, segmentSeconds } = plan;
  const video = plan.hasVideo && rendition.height > 0;
  const args: string[] = [];
  if (video) args.push("-map", `[v${index}]`);
  if (hasAudio) args.push("-map", "0:a:0");

  if (video) {
    const kbps = rendition.videoBitrateKbps;
    args.push("-c:v", "libx264", "-preset", plan.preset, "-profile:v", "main", "-pix_fmt", "yuv420p");
    if (plan.x264Threads) args.push("-threads:v", String(plan.x264Threads));
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
  return args;
}

/** Issue 27 item 4: static renditions, beside `hls/` in outDir. */
export const STATIC_DIR = "static";
/** The master playlist's audio-only variant: `hls/audio-only/index.m3u8`. Rung names cannot take it (validateJob). */
export const AUDIO_VARIANT = "audio-only";
/** The M4A's file name under `static/`. */
export const M4A_FILE = "audio.m4a";

export interface PlannedStaticFile {
  /** The rendition copied. */
  rendition: string;
  kind: "mp4" | "m4a";
  /** Relative to outDir. */
  file: string;
}

/** What the copy run makes besides the downloads (planned by copy-outputs.ts). */
export interface CopyExtras {
  statics: PlannedStaticFile[];
  /** The rendition whose audio becomes the master's audio-only variant. */
  audioVariant: { rendition: string } | null;
}

export const NO_EXTRAS: CopyExtras = { statics: [], audioVariant: null };

export function staticFileName(rendition: string, kind: "mp4" | "m4a"): string {
  return posix.join(STATIC_DIR, kind === "m4a" ? M4A_FILE : `${rendition}.mp4`);
}

/** The job's last stage: one copy run, when it has anything to copy (downloads, static renditions, the audio variant). */
export function copyStages(plan: Pick<EncodePlan, "mp4Dir" | "segmentSeconds">, downloads: PlannedDownloadFile[], extras: CopyExtras, paths: Pick<ToolPaths, "outDir">): RunStage[] {
  if (downloads.length === 0 && extras.statics.length === 0 && !extras.audioVariant) return [];
  return [{ kind: "downloads", runs: [{ label: "downloads", args: buildCopyArgs(plan, downloads, extras, paths), readsInput: false, weight: 1 }] }];
}

/**
 * One run for all downloads: each is a stream copy of its rendition's HLS
 * output (or, for a DRM job, of its intermediate MP4; no second encode),
 * remuxed to Matroska or to CENC-encrypted MP4.
 */
export function buildDownloadArgs(downloads: PlannedDownloadFile[], paths: Pick<ToolPaths, "outDir">, mp4Dir?: string): string[] {
  return buildCopyArgs({ mp4Dir, segmentSeconds: 4 }, downloads, NO_EXTRAS, paths);
}

/**
 * The one copy run of a job (no second encode): each rendition it needs read once (its HLS media playlist,
 * or a DRM job's scratch MP4), then every output. Downloads to Matroska or CENC MP4; an MP4 static rendition
 * is the rung's video and audio with the index up front (`faststart`: it plays while it downloads); the M4A
 * is the audio in an `ipod` (M4A brand) file, also `faststart`; the audio variant is the audio in the
 * ladder's very HLS muxer arguments (same segment length and type), which write its one-variant master.
 */
export function buildCopyArgs(plan: Pick<EncodePlan, "mp4Dir" | "segmentSeconds">, downloads: PlannedDownloadFile[], extras: CopyExtras, paths: Pick<ToolPaths, "outDir">): string[] {
  const sources = [...new Set([...downloads.map((d) => d.rendition), ...extras.statics.map((s) => s.rendition), ...(extras.audioVariant ? [extras.audioVariant.rendition] : [])])];
  const args = [...COMMON];
  for (const r of sources) args.push("-i", posix.join(paths.outDir, plan.mp4Dir ? scratchMp4Path(plan.mp4Dir, r) : mediaPlaylistPath(r)));
  const input = (r: string) => sources.indexOf(r);
  for (const d of downloads) {
    const i = input(d.rendition);
    args.push("-map", `${i}:v?`, "-map", `${i}:a?`, "-c", "copy");
    if (d.format === "mkv") {
      args.push("-f", "matroska");
    } else {
      if (!d.key || !d.kid) throw new Error(`encrypted download for ${d.rendition} needs key and kid`);
      args.push("-encryption_scheme", "cenc-aes-ctr", "-encryption_key", d.key, "-encryption_kid", d.kid, "-movflags", "+faststart", "-f", "mp4");
    }
    args.push(posix.join(paths.outDir, d.file));
  }
  for (const s of extras.statics) {
    const i = input(s.rendition);
    const maps = s.kind === "mp4" ? ["-map", `${i}:v`, "-map", `${i}:a?`] : ["-map", `${i}:a`];
    args.push(...maps, "-c", "copy", "-movflags", "+faststart", "-f", s.kind === "mp4" ? "mp4" : "ipod", posix.join(paths.outDir, s.file));
  }
  if (extras.audioVariant) {
    const variant: PlannedRendition = { name: AUDIO_VARIANT, width: 0, height: 0, videoBitrateKbps: 0, audioBitrateKbps: 0 };
    args.push("-map", `${input(extras.audioVariant.rendition)}:a`, "-c", "copy");
    args.push(...hlsMuxerArgs({ hasVideo: false, hasAudio: true, segmentSeconds: plan.segmentSeconds }, variant, paths));
  }
  return args;
}
