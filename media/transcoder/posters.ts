/**
 * Posters: a thumbnail (one JPEG frame) and a storyboard (a sprite JPEG of
 * small tiles plus a WebVTT whose cues point at `sprite.jpg#xywh=x,y,w,h`),
 * made by branches of the filter graph of one rendition's encode run: the
 * source is decoded once for both, so the extra cost is scaling a few frames
 * and two JPEG encodes (measured in README.md).
 */
import { posix } from "node:path";
import type { ProbeResult } from "./types.ts";

export const THUMBNAIL_FILE = "thumbnail.jpg";
export const SPRITE_FILE = "sprite.jpg";
export const STORYBOARD_FILE = "storyboard.vtt";
export const POSTER_FILES = [THUMBNAIL_FILE, SPRITE_FILE, STORYBOARD_FILE] as const;

/** Thumbnail width cap; the frame keeps the display aspect ratio. */
export const THUMBNAIL_MAX_WIDTH = 1280;
/** Storyboard tile width (players show ~160 px previews). */
export const TILE_WIDTH = 160;
/** At most this many tiles: the interval grows with the duration. */
export const MAX_TILES = 100;
/** Tiles per sprite row (a 100-tile sprite is 1600 px wide). */
const COLUMNS = 10;
/** Where the thumbnail is taken: 10 % into the video, past most black intros and fades. */
const THUMBNAIL_AT = 0.1;

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

export interface PosterPlan {
  /** Seconds into the video of the thumbnail frame. */
  thumbnailAt: number;
  thumbnailWidth: number;
  thumbnailHeight: number;
  /** Seconds between storyboard tiles (whole seconds). */
  interval: number;
  /** Tiles with a cue: ceil(duration / interval), at most MAX_TILES. */
  tiles: number;
  columns: number;
  rows: number;
  tileWidth: number;
  tileHeight: number;
}

/** What to make for a source, or null when there is no picture or no duration to sample. */
export function planPosters(probe: ProbeResult): PosterPlan | null {
  const duration = probe.durationSeconds;
  if (!probe.hasVideo || !duration || !(duration > 0)) return null;
  // Display size (rotation and pixel aspect applied); 16:9 when the probe cannot tell.
  const w = probe.width && probe.height ? probe.width : 1280;
  const h = probe.width && probe.height ? probe.height : 720;
  const thumbnailWidth = even(Math.min(THUMBNAIL_MAX_WIDTH, w));
  const interval = Math.max(1, Math.ceil(duration / MAX_TILES));
  const tiles = Math.max(1, Math.min(MAX_TILES, Math.ceil(duration / interval)));
  const columns = Math.min(COLUMNS, tiles);
  return {
    thumbnailAt: Math.round(duration * THUMBNAIL_AT * 1000) / 1000,
    thumbnailWidth,
    thumbnailHeight: even((thumbnailWidth * h) / w),
    interval,
    tiles,
    columns,
    rows: Math.ceil(tiles / columns),
    tileWidth: TILE_WIDTH,
    tileHeight: even((TILE_WIDTH * h) / w),
  };
}

/**
 * Filter graph branches fed by a split of the decoded source: `[inThumb]`
 * → `[thumb]` (one frame at thumbnailAt) and `[inSprite]` → `[sprite]` (one
 * frame every interval seconds, tiled; `tile` flushes a partly filled grid at
 * the end of the input). Frames the branches drop are dropped before any
 * scaling. Timestamps start at 0 here (ffmpeg shifts the
 * input's start time away), so `trim` and `fps` count from the first frame.
 */
export function posterFilters(plan: PosterPlan, inThumb: string, inSprite: string): string[] {
  return [
    // The second trim ends the branch after its first frame: without it every later frame was still scaled and
    // converted to full-range YUV for the JPEG encoder and then thrown away (measured: +35 % CPU of a 360p run).
    `[${inThumb}]trim=start=${plan.thumbnailAt},trim=end_frame=1,scale=${plan.thumbnailWidth}:${plan.thumbnailHeight},setsar=1[thumb]`,
    `[${inSprite}]fps=1/${plan.interval},scale=${plan.tileWidth}:${plan.tileHeight},setsar=1,tile=${plan.columns}x${plan.rows}[sprite]`,
  ];
}

/**
 * The two image outputs (placed before the rendition's own output: ffmpeg
 * options belong to the next file named). `-huffman default`: the MJPEG
 * encoder's default "optimal" tables crash the wasm core ("call_indirect to
 * a signature that does not match", or out-of-bounds access, depending on
 * the picture and `-q:v`; measured with @ffmpeg/core 0.12); the standard
 * tables cost a few percent of file size and work on both backends.
 */
export function posterOutputArgs(outDir: string): string[] {
  const image = (label: string, quality: number, file: string) => [
    "-map",
    `[${label}]`,
    "-frames:v",
    "1",
    "-c:v",
    "mjpeg",
    "-huffman",
    "default",
    "-q:v",
    String(quality),
    "-update",
    "1",
    "-f",
    "image2",
    posix.join(outDir, file),
  ];
  return [...image("thumb", 3, THUMBNAIL_FILE), ...image("sprite", 5, SPRITE_FILE)];
}

const timestamp = (seconds: number) => {
  const ms = Math.round(seconds * 1000);
  const hh = Math.floor(ms / 3_600_000);
  const mm = Math.floor((ms % 3_600_000) / 60_000);
  const ss = Math.floor((ms % 60_000) / 1000);
  const pad = (n: number, d = 2) => String(n).padStart(d, "0");
  return `${pad(hh)}:${pad(mm)}:${pad(ss)}.${pad(ms % 1000, 3)}`;
};

/**
 * The storyboard: one cue per tile, back to back from 0 to `durationSeconds`
 * (the measured duration; the last cue ends there), each pointing at its
 * tile with a media fragment relative to the VTT's own URL.
 */
export function buildStoryboardVtt(plan: PosterPlan, durationSeconds: number): string {
  const lines = ["WEBVTT", ""];
  const count = Math.max(1, Math.min(plan.tiles, Math.ceil(durationSeconds / plan.interval)));
  for (let i = 0; i < count; i++) {
    const start = i * plan.interval;
    const end = i === count - 1 ? Math.max(durationSeconds, start + 0.001) : (i + 1) * plan.interval;
    const x = (i % plan.columns) * plan.tileWidth;
    const y = Math.floor(i / plan.columns) * plan.tileHeight;
    lines.push(`${timestamp(start)} --> ${timestamp(end)}`, `${SPRITE_FILE}#xywh=${x},${y},${plan.tileWidth},${plan.tileHeight}`, "");
  }
  return lines.join("\n");
}
