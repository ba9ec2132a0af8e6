/**
 * ffmpeg argument lists for images cut from a video (issue 27, images by
 * URL): one still frame (`thumbnail.{jpg,png,webp}`) or a short animation
 * (`animated.{gif,webp}`). Pure: paths in, arguments out, so the same lists
 * run on the native and the wasm backend (render-image.ts).
 */

export type StillFormat = "jpg" | "png" | "webp";
export type AnimatedFormat = "gif" | "webp";
export type FitMode = "preserve" | "crop" | "pad";

/** Where an image's time is in its input: `offset` seconds in; `inputSeek` seeks the demuxer there (a whole indexed file), else frames are decoded from the start and dropped (a few HLS segments: MPEG-TS input seeking lands past the one keyframe and yields no frame). */
interface Position {
  offset: number;
  inputSeek?: boolean;
}

export interface StillSpec extends Position {
  kind: "thumbnail";
  format: StillFormat;
  width: number | null;
  height: number | null;
  fitMode: FitMode;
}

export interface AnimatedSpec extends Position {
  kind: "animated";
  format: AnimatedFormat;
  seconds: number;
  width: number;
  fps: number;
}

export type ImageSpec = StillSpec | AnimatedSpec;

const secs = (n: number) => (Math.round(n * 1000) / 1000).toFixed(3);

/**
 * The scale (and crop or pad) of a still: none without a size; one side
 * given → the other follows the aspect ratio; both → `preserve` fits inside
 * the box, `crop` fills it and cuts the overflow (centred), `pad` fits and
 * fills the rest with black bars. Square pixels out (`setsar=1`).
 */
export function stillFilter(spec: Pick<StillSpec, "width" | "height" | "fitMode">): string {
  const { width: w, height: h } = spec;
  if (w === null && h === null) return "setsar=1";
  if (w === null || h === null) return `scale=${w ?? -2}:${h ?? -2},setsar=1`;
  if (spec.fitMode === "crop") return `scale=${w}:${h}:force_original_aspect_ratio=increase,crop=${w}:${h},setsar=1`;
  if (spec.fitMode === "pad") return `scale=${w}:${h}:force_original_aspect_ratio=decrease,pad=${w}:${h}:(ow-iw)/2:(oh-ih)/2:black,setsar=1`;
  return `scale=${w}:${h}:force_original_aspect_ratio=decrease,setsar=1`;
}

const STILL_CODEC: Record<StillFormat, string[]> = {
  // JPEG quality 3 of 2–31 (visually clean, ~1/10 of a PNG); full-range YUV as the encoder wants.
  jpg: ["-c:v", "mjpeg", "-q:v", "3", "-pix_fmt", "yuvj420p"],
  png: ["-c:v", "png"],
  webp: ["-c:v", "libwebp", "-quality", "80"],
};

/** `-ss` before the input (demuxer seek) or after it (decode and drop): both frame accurate. */
function seekInput(input: string, spec: Position): string[] {
  return spec.inputSeek ? ["-ss", secs(spec.offset), "-i", input] : ["-i", input, "-ss", secs(spec.offset)];
}

/** Decodes from `offset` and writes one frame. */
export function stillArgs(input: string, output: string, spec: StillSpec): string[] {
  return [
    "-hide_banner",
    "-nostdin",
    "-loglevel",
    "error",
    ...seekInput(input, spec),
    "-map",
    "0:v:0",
    "-frames:v",
    "1",
    "-vf",
    stillFilter(spec),
    "-an",
    ...STILL_CODEC[spec.format],
    "-f",
    "image2",
    "-y",
    output,
  ];
}

/**
 * A still from `pipe:0`, an MPEG-TS whose wanted frame is at `frameAt` seconds and every frame before it earlier
 * (ts-frame-packets.ts), written to `pipe:1`: fixed arguments, so the process can be started before the request
 * (warm-ffmpeg.ts). `-copyts` keeps the input's timestamps for `select`; two decoding threads (measured side by
 * side, warm, at load 12-17 on 2 cores: 1 thread 785 ms p50 / 550 ms CPU, 2 threads 632 / 595, auto (3) 919 / 630).
 */
export function pipedStillArgs(spec: Omit<StillSpec, "offset" | "inputSeek">, frameAt: number): string[] {
  return [
    "-hide_banner",
    "-loglevel",
    "error",
    "-copyts",
    "-threads",
    "2",
    "-f",
    "mpegts",
    "-i",
    "pipe:0",
    "-map",
    "0:v:0",
    "-frames:v",
    "1",
    "-vf",
    `select=gte(t\\,${frameAt}),${stillFilter(spec)}`,
    "-an",
    ...STILL_CODEC[spec.format],
    "-f",
    "image2pipe",
    "pipe:1",
  ];
}

/**
 * A GIF gets its own palette (palettegen over the clip, paletteuse with
 * dithering): ffmpeg's default 256-colour web palette bands badly. WebP is
 * lossy and animated (libwebp, loops forever like the GIF).
 */
export function animatedArgs(input: string, output: string, spec: AnimatedSpec): string[] {
  const base = `fps=${spec.fps},scale=${spec.width}:-2:flags=lanczos,setsar=1`;
  const head = ["-hide_banner", "-nostdin", "-loglevel", "error", ...seekInput(input, spec), "-t", secs(spec.seconds), "-an"];
  if (spec.format === "gif") {
    const graph = `[0:v:0]${base},split[a][b];[a]palettegen=stats_mode=diff[p];[b][p]paletteuse=dither=bayer:bayer_scale=3[out]`;
    return [...head, "-filter_complex", graph, "-map", "[out]", "-loop", "0", "-f", "gif", "-y", output];
  }
  return [...head, "-map", "0:v:0", "-vf", base, "-c:v", "libwebp", "-quality", "70", "-loop", "0", "-f", "webp", "-y", output];
}

export function imageArgs(input: string, output: string, spec: ImageSpec): string[] {
  return spec.kind === "thumbnail" ? stillArgs(input, output, spec) : animatedArgs(input, output, spec);
}
