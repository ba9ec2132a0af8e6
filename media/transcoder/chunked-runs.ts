/**
 * The `chunked` run layout (wasm, issue 29): the single-threaded wasm core
 * uses one core per run, so a job is cut into runs that keep every worker
 * busy until the end, and joined without re-encoding.
 *
 * - `chunks` stage: the source's video is cut into time chunks whose length
 *   is a whole number of segments (so every chunk starts on a segment
 *   boundary, where every layout forces a keyframe). One run per chunk
 *   decodes it once (`-ss`/`-t` before `-i`: accurate seek, each frame lands in
 *   exactly one chunk) and encodes every rung, video only, into MPEG-TS
 *   files (`<dir>/<rung>/c00000.ts`). One more run encodes the audio once
 *   per distinct audio bitrate over the whole source (`<dir>/audio-<k>k.ts`,
 *   so there is no AAC priming at chunk joins) and makes the posters.
 * - `hls` (or `mp4` for DRM) stage: one stream-copy run per rendition joins
 *   its chunks with the concat demuxer (a `duration` per chunk, so the
 *   timestamps run on exactly) and its audio into the very muxer arguments
 *   of the other layouts (`hlsMuxerArgs`/`mp4MuxerArgs`), which cut the
 *   same segments at the same keyframes. The audio is shifted back by the
 *   encoder's 1024-sample priming, which the other layouts' joint encode
 *   places before the first video frame: packet timestamps equal theirs.
 *
 * ffmpeg's HLS muxer cannot tell a copied stream's bitrate or H.264 profile,
 * so the rendition's one-variant master playlist is rewritten afterwards
 * with the values it writes for an encode (`fixPartialMaster`).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { posix } from "node:path";
import {
  COMMON,
  NO_EXTRAS,
  copyStages,
  type CopyExtras,
  buildEncodeArgs,
  hlsMuxerArgs,
  mp4MuxerArgs,
  scaleFilter,
  type EncodePlan,
  type PlannedDownloadFile,
  type PlannedRendition,
  type PlannedRun,
  type RunStage,
  type ToolPaths,
} from "./build-ffmpeg-args.ts";
import { posterFilters, posterOutputArgs } from "./posters.ts";

/** The chunks' directory under outDir (inside a DRM job's random scratch directory: clear media). */
export const CHUNKS_DIR = ".chunks";
/** The AAC encoder's priming (`initial_padding`), in samples. */
const AAC_PRIMING_SAMPLES = 1024;

export interface ChunkPlan {
  /** Relative to outDir. */
  dir: string;
  /** Start of each chunk in seconds, ascending from 0; a chunk ends where the next starts, the last at the end of the source. */
  starts: number[];
  durationSeconds: number;
}

/**
 * About two chunks per worker (so the last runs to finish are short), each a
 * whole number of segments; a remainder shorter than half a chunk joins the
 * last chunk (no near-empty chunk when the container runs a little past the
 * video). null: nothing to gain (one worker, or no duration to cut by).
 */
export function planChunks(durationSeconds: number | null, segmentSeconds: number, parallelism: number, dir: string): ChunkPlan | null {
  if (!durationSeconds || !(durationSeconds > 0) || parallelism < 2) return null;
  const segments = Math.max(1, Math.ceil(durationSeconds / segmentSeconds - 1e-9));
  const chunkSeconds = Math.max(1, Math.ceil(segments / (2 * parallelism))) * segmentSeconds;
  const starts = [0];
  for (let i = 1; i * chunkSeconds < durationSeconds - chunkSeconds / 2; i++) starts.push(i * chunkSeconds);
  return { dir, starts, durationSeconds };
}

export function chunkSeconds(chunks: ChunkPlan, i: number): number {
  return (chunks.starts[i + 1] ?? chunks.durationSeconds) - chunks.starts[i]!;
}

const chunkFile = (i: number) => `c${String(i).padStart(5, "0")}.ts`;
const listPath = (chunks: ChunkPlan, rendition: string) => posix.join(chunks.dir, rendition, "list.ffconcat");
const audioPath = (chunks: ChunkPlan, kbps: number) => posix.join(chunks.dir, `audio-${kbps}k.ts`);
const pixels = (renditions: PlannedRendition[]) => renditions.reduce((sum, r) => sum + Math.max(1, r.width * r.height), 0);

/** Every run of a chunked job: the chunk and audio encodes, the joins, then the copies (as in buildJobRuns). */
export function buildChunkedJobRuns(plan: EncodePlan, chunks: ChunkPlan, downloads: PlannedDownloadFile[], paths: ToolPaths, extras: CopyExtras = NO_EXTRAS): RunStage[] {
  const video = plan.renditions.filter((r) => r.height > 0);
  const encodes: PlannedRun[] = chunks.starts.map((start, i) => ({
    label: `chunk ${i + 1}/${chunks.starts.length}`,
    args: buildChunkArgs(plan, chunks, i, paths),
    readsInput: true,
    weight: pixels(video) * chunkSeconds(chunks, i),
    seconds: chunkSeconds(chunks, i),
  }));
  const audio = buildAudioArgs(plan, chunks, paths);
  // Decoding and AAC: a small share of a chunk's cost per second of media.
  if (audio) encodes.push({ label: "audio", args: audio, readsInput: true, weight: 0.05 * pixels(video) * chunks.durationSeconds });
  const stages: RunStage[] = [
    { kind: "chunks", progressWeight: plan.mp4Dir ? 75 : 85, runs: encodes },
    {
      kind: plan.mp4Dir ? "mp4" : "hls",
      progressWeight: 5,
      runs: video.map((r) => ({ label: r.name, args: buildJoinArgs(plan, chunks, r, paths), readsInput: false, weight: 1 })),
    },
  ];
  return [...stages, ...copyStages(plan, downloads, extras, paths)];
}

/** One chunk, decoded once, every rung's video encoded into its own MPEG-TS file (keyframes forced from the chunk's start, a segment boundary). */
function buildChunkArgs(plan: EncodePlan, chunks: ChunkPlan, i: number, paths: ToolPaths): string[] {
  const start = chunks.starts[i]!;
  const last = i === chunks.starts.length - 1;
  const args = [...COMMON];
  if (start > 0) args.push("-ss", String(start));
  if (!last) args.push("-t", String(chunkSeconds(chunks, i)));
  args.push("-i", paths.input);
  const video = plan.renditions.filter((r) => r.height > 0);
  const graph =
    video.length === 1
      ? `[0:v:0]${scaleFilter(video[0]!, 0)}`
      : [`[0:v:0]split=${video.length}${video.map((_, j) => `[vmain${j}]`).join("")}`, ...video.map((r, j) => `[vmain${j}]${scaleFilter(r, j)}`)].join(";");
  args.push("-filter_complex", graph);
  video.forEach((r, j) => {
    args.push(...buildEncodeArgs({ ...plan, hasAudio: false }, r, j));
    args.push("-max_muxing_queue_size", "1024", "-f", "mpegts", posix.join(paths.outDir, chunks.dir, r.name, chunkFile(i)));
  });
  return args;
}

/** The whole source's audio, once per distinct bitrate, plus the posters (their filter branches of the other layouts); null when there is neither. */
function buildAudioArgs(plan: EncodePlan, chunks: ChunkPlan, paths: ToolPaths): string[] | null {
  const posters = plan.posters?.plan ?? null;
  if (!plan.hasAudio && !posters) return null;
  const args = [...COMMON, "-i", paths.input];
  if (posters) args.push("-filter_complex", [`[0:v:0]split=2[vthumb][vsprite]`, ...posterFilters(posters, "vthumb", "vsprite")].join(";"), ...posterOutputArgs(paths.outDir));
  if (plan.hasAudio) {
    for (const kbps of audioBitrates(plan)) args.push("-map", "0:a:0", "-c:a", "aac", "-ac", "2", "-b:a:0", `${kbps}k`, "-f", "mpegts", posix.join(paths.outDir, audioPath(chunks, kbps)));
  }
  return args;
}

function audioBitrates(plan: EncodePlan): number[] {
  return [...new Set(plan.renditions.filter((r) => r.height > 0).map((r) => r.audioBitrateKbps))];
}

/** One rendition's chunks and audio, stream-copied into the same muxer as the other layouts. */
function buildJoinArgs(plan: EncodePlan, chunks: ChunkPlan, r: PlannedRendition, paths: ToolPaths): string[] {
  const args = [...COMMON, "-f", "concat", "-i", posix.join(paths.outDir, listPath(chunks, r.name))];
  if (plan.hasAudio) {
    if (plan.audioSampleRate) args.push("-itsoffset", (-AAC_PRIMING_SAMPLES / plan.audioSampleRate).toFixed(6));
    args.push("-i", posix.join(paths.outDir, audioPath(chunks, r.audioBitrateKbps)));
  }
  args.push("-map", "0:v:0");
  if (plan.hasAudio) args.push("-map", "1:a:0");
  args.push("-c", "copy");
  // The MP4 muxer takes a copied MPEG-TS stream's 90 kHz clock; an encode's track gets its frame rate's (the packager's timescale).
  const timescale = plan.mp4Dir ? movVideoTimescale(plan.frameRate) : null;
  if (timescale) args.push("-video_track_timescale", String(timescale));
  args.push(...(plan.mp4Dir ? mp4MuxerArgs(r, paths, plan.mp4Dir) : hlsMuxerArgs(plan, r, paths)));
  return args;
}

/** What ffmpeg's MP4 muxer picks for an encoded video track: the encoder's time base denominator (1/fps, 1001/30000 for NTSC rates), doubled until >= 10000. */
export function movVideoTimescale(fps: number | null): number | null {
  if (!fps || !(fps > 0)) return null;
  let den = Math.abs(fps - Math.round(fps)) < 1e-6 ? Math.round(fps) : Math.round((fps * 1001) / 1000) * 1000;
  while (den < 10000) den *= 2;
  return den;
}

/** Creates the chunk directories and each rendition's concat list (relative names, so the same list works for both backends' paths). */
export function prepareChunks(outDir: string, chunks: ChunkPlan, renditions: PlannedRendition[]): void {
  const lines = ["ffconcat version 1.0"];
  chunks.starts.forEach((_, i) => {
    lines.push(`file ${chunkFile(i)}`);
    // The last chunk's length is whatever it holds; the others' set where the next one's timestamps start.
    if (i < chunks.starts.length - 1) lines.push(`duration ${chunkSeconds(chunks, i)}`);
  });
  for (const r of renditions.filter((x) => x.height > 0)) {
    fs.mkdirSync(path.join(outDir, chunks.dir, r.name), { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(outDir, listPath(chunks, r.name)), `${lines.join("\n")}\n`);
  }
}

/**
 * The one-variant master playlist of a joined rendition with the values the
 * HLS muxer writes for an encode: BANDWIDTH = the video and audio bitrates
 * plus 10 %, CODECS from the H.264 stream's SPS and AAC-LC. (For a copied
 * stream it knows neither, and leaves the variant out when it has no
 * bitrate at all.)
 */
export function fixPartialMaster(ffmpegText: string, r: PlannedRendition, hasAudio: boolean, avcCodec: string): string {
  const header = ffmpegText.split("\n").filter((l) => l.startsWith("#EXTM3U") || l.startsWith("#EXT-X-VERSION"));
  const bits = r.videoBitrateKbps * 1000 + (hasAudio ? r.audioBitrateKbps * 1000 : 0);
  const codecs = [avcCodec, ...(hasAudio ? ["mp4a.40.2"] : [])].join(",");
  const inf = `#EXT-X-STREAM-INF:BANDWIDTH=${bits + Math.floor(bits / 10)},RESOLUTION=${r.width}x${r.height},CODECS="${codecs}"`;
  return `${[...header, inf, `${r.name}/index.m3u8`].join("\n")}\n\n`;
}

/**
 * `avc1.PPCCLL` (profile, constraint flags, level) from the first SPS in an
 * MPEG-TS file: what the HLS muxer reads from an encoder's extradata. null
 * when none is found in the first packets.
 */
export function avcCodecFromTs(ts: Uint8Array): string | null {
  const payload: number[] = [];
  let scanned = 0;
  for (let off = 0; off + 188 <= ts.length && off < 188 * 400; off += 188) {
    if (ts[off] !== 0x47) return null;
    const afc = (ts[off + 3]! >> 4) & 3;
    let start = off + 4;
    if (afc & 2) start += 1 + ts[start]!;
    if (!(afc & 1) || start >= off + 188) continue;
    for (let j = start; j < off + 188; j++) payload.push(ts[j]!);
    for (let k = scanned; k + 6 < payload.length; k++, scanned = k) {
      if (payload[k] === 0 && payload[k + 1] === 0 && payload[k + 2] === 1 && (payload[k + 3]! & 0x1f) === 7) {
        const hex = (n: number) => n.toString(16).padStart(2, "0");
        return `avc1.${hex(payload[k + 4]!)}${hex(payload[k + 5]!)}${hex(payload[k + 6]!)}`;
      }
    }
  }
  return null;
}

/** Path (relative to outDir) of a rendition's first chunk, for `avcCodecFromTs`. */
export function firstChunkPath(chunks: ChunkPlan, rendition: string): string {
  return posix.join(chunks.dir, rendition, chunkFile(0));
}
