/**
 * The one place ffmpeg command lines are built. Both backends run exactly
 * these lists; they differ only in the paths they pass in (host paths for
 * native, mount points for wasm), which is why paths are parameters.
 */
import { posix } from 'node:path';
import type { DownloadFormat } from './types.ts';

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

export const HLS_DIR = 'hls';
export const DOWNLOADS_DIR = 'downloads';
export const MASTER_PLAYLIST = 'master.m3u8';
export const MEDIA_PLAYLIST = 'index.m3u8';

const COMMON = ['-hide_banner', '-nostdin', '-y', '-loglevel', 'error', '-nostats', '-progress', 'pipe:1'];

export function mediaPlaylistPath(rendition: string): string {
  return posix.join(HLS_DIR, rendition, MEDIA_PLAYLIST);
}

export function downloadFileName(rendition: string, format: DownloadFormat): string {
  return posix.join(DOWNLOADS_DIR, `${rendition}.${format === 'mkv' ? 'mkv' : 'mp4'}`);
}

/** One run for the whole ladder: split + scale per rung, one HLS variant each. */
export function buildHlsArgs(plan: EncodePlan, paths: ToolPaths): string[] {
  const { renditions, hasVideo, hasAudio, segmentSeconds } = plan;
  const video = hasVideo ? renditions.filter((r) => r.height > 0) : [];
  const args = [...COMMON, '-i', paths.input];

  if (video.length > 0) {
    const splits = video.map((_, i) => `[s${i}]`).join('');
    const scales = video.map((r, i) => `[s${i}]scale=${r.width}:${r.height},setsar=1[v${i}]`).join(';');
    args.push('-filter_complex', `[0:v:0]split=${video.length}${splits};${scales}`);
  }
  const streamMap: string[] = [];
  if (video.length > 0) {
    video.forEach((r, i) => {
      args.push('-map', `[v${i}]`);
      if (hasAudio) args.push('-map', '0:a:0');
      streamMap.push(hasAudio ? `v:${i},a:${i},name:${r.name}` : `v:${i},name:${r.name}`);
    });
  } else {
    args.push('-map', '0:a:0');
    streamMap.push(`a:0,name:${renditions[0]?.name ?? 'audio'}`);
  }

  if (video.length > 0) {
    args.push('-c:v', 'libx264', '-preset', plan.preset, '-profile:v', 'main', '-pix_fmt', 'yuv420p');
    video.forEach((r, i) => {
      const kbps = r.videoBitrateKbps;
      args.push(`-b:v:${i}`, `${kbps}k`, `-maxrate:v:${i}`, `${Math.round(kbps * 1.1)}k`, `-bufsize:v:${i}`, `${kbps * 2}k`);
    });
    // Segments may only be cut at keyframes, and players switch rungs at
    // segment boundaries: every rung gets a keyframe at exactly the same
    // timestamps (forced by time, which also holds for variable frame rate),
    // and scene-cut keyframes are disabled so GOPs stay fixed.
    if (plan.frameRate && plan.frameRate > 0) {
      const gop = Math.max(1, Math.round(plan.frameRate * segmentSeconds));
      args.push('-g', String(gop), '-keyint_min', String(gop));
    }
    args.push('-sc_threshold', '0', '-force_key_frames', `expr:gte(t,n_forced*${segmentSeconds})`);
  }
  if (hasAudio) {
    args.push('-c:a', 'aac', '-ac', '2');
    const audioRungs = video.length > 0 ? video : renditions.slice(0, 1);
    audioRungs.forEach((r, i) => args.push(`-b:a:${i}`, `${r.audioBitrateKbps}k`));
  }

  const hlsDir = posix.join(paths.outDir, HLS_DIR);
  args.push(
    '-max_muxing_queue_size', '1024',
    '-f', 'hls',
    '-hls_time', String(segmentSeconds),
    '-hls_playlist_type', 'vod',
    '-hls_segment_type', 'mpegts',
    '-hls_flags', 'independent_segments',
    '-hls_segment_filename', posix.join(hlsDir, '%v', 'seg-%05d.ts'),
    '-master_pl_name', MASTER_PLAYLIST,
    '-var_stream_map', streamMap.join(' '),
    posix.join(hlsDir, '%v', MEDIA_PLAYLIST),
  );
  return args;
}

/**
 * One run for all downloads: each is a stream copy of its rendition's HLS
 * output (no second encode), remuxed to Matroska or to CENC-encrypted MP4.
 */
export function buildDownloadArgs(downloads: PlannedDownloadFile[], paths: Pick<ToolPaths, 'outDir'>): string[] {
  const args = [...COMMON];
  for (const d of downloads) args.push('-i', posix.join(paths.outDir, mediaPlaylistPath(d.rendition)));
  downloads.forEach((d, i) => {
    args.push('-map', `${i}:v?`, '-map', `${i}:a?`, '-c', 'copy');
    if (d.format === 'mkv') {
      args.push('-f', 'matroska');
    } else {
      if (!d.key || !d.kid) throw new Error(`encrypted download for ${d.rendition} needs key and kid`);
      args.push(
        '-encryption_scheme', 'cenc-aes-ctr',
        '-encryption_key', d.key,
        '-encryption_kid', d.kid,
        '-movflags', '+faststart',
        '-f', 'mp4',
      );
    }
    args.push(posix.join(paths.outDir, d.file));
  });
  return args;
}
