import { mkdir, readdir, unlink } from "node:fs/promises";
import { join, resolve, sep } from "node:path";
import { CmafOutputFormat, EncodedAudioPacketSource, EncodedPacket, EncodedVideoPacketSource, HlsOutputFormat, MpegTsOutputFormat, Output, type TargetRequest } from "mediabunny";
import type { FlvTag } from "../flv/flv-tag.ts";
import { writeFileAtomic } from "./atomic-write.ts";
import { bufferedPathedTarget } from "./buffered-pathed-target.ts";
import { takeTag } from "./tag-intake.ts";
import { createLiveTracks, type MediaEvent } from "./live-tracks.ts";
import { parseMediaPlaylist, withTargetDuration } from "./media-playlist.ts";
import { createSegmentRetention } from "./segment-retention.ts";
import type { AudioTrackConfig, VideoTrackConfig } from "./track-config.ts";
import { rewriteVideoDts } from "./ts-dts-rewrite.ts";

/** The media playlist: this is what `hls_url` points at. */
export const LIVE_HLS_PLAYLIST = "index.m3u8";
/** mediabunny always writes a master playlist too (one variant → index.m3u8); handy, not required. */
export const LIVE_HLS_MASTER = "master.m3u8";

export const LIVE_HLS_LATENCY_PRESETS = {
  NORMAL: { segmentSeconds: 2, windowSegments: 6 },
  LOW: { segmentSeconds: 1, windowSegments: 3 },
} as const;

export interface LiveHlsSegmentInfo {
  /** Relative to the playlist, e.g. "segment-3.ts". */
  uri: string;
  durationSeconds: number;
  /** Media sequence number of the segment. */
  sequence: number;
  /** Date.now() when the tag holding the segment's first keyframe (first audio frame if audio-only) was pushed. */
  firstKeyframeArrivalMs: number;
  /** Date.now() right after the playlist listing the segment was renamed into place. */
  publishedAtMs: number;
}

export interface LiveHlsLogger {
  debug?(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
  warn?(message: string, fields?: Record<string, unknown>): void;
  error?(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Where finished files go when not to `dir` (e.g. an object store). Each call
 * is awaited before the next file is produced, so a playlist is written only
 * after every segment (and init segment) it names has been written.
 */
export interface LiveHlsFileSink {
  /** Once, before any file: a previous run's files are removed (they would be served as this run's). */
  prepare(): Promise<void>;
  /** A whole file, by name relative to the playlist (`index.m3u8`, `segment-3.ts`, `init.mp4`). */
  write(name: string, bytes: Uint8Array): Promise<void>;
  /** A segment that left the playlist's grace window; a missing one is not an error. */
  remove(name: string): Promise<void>;
}

export interface LiveHlsPackagerOptions {
  /** Created if missing (unless `files` is given). Stale playlists/segments of a previous run are removed. */
  dir: string;
  /** Finished files go here instead of atomic files in `dir`. */
  files?: LiveHlsFileSink;
  /** Target segment length; segments are cut on keyframes, so the encoder's GOP should divide it. */
  segmentSeconds: number;
  /** Segments listed in the live playlist. */
  windowSegments: number;
  onSegment?: (info: LiveHlsSegmentInfo) => void;
  logger?: LiveHlsLogger;
  /** 'mpegts' (default, widest player support) or 'cmaf' (fMP4 .m4s + init.mp4). */
  segmentFormat?: "mpegts" | "cmaf";
  /** Segments kept on disk after leaving the playlist. Default windowSegments + 1 (RFC 8216 6.2.2). */
  graceSegments?: number;
  /**
   * How much media (ms of timestamps) to wait for the second track's sequence
   * header before starting with one track. Encoders send both at once, so this
   * only delays audio-only or video-only streams.
   */
  probeMs?: number;
}

export interface LiveHlsInfo {
  width: number | null;
  height: number | null;
  resolution: `${number}x${number}` | null;
  hasAudio: boolean;
  hasVideo: boolean;
  /** Segments published so far (including those that left the window). */
  segments: number;
  videoCodec: string | null;
  audioCodec: string | null;
}

export interface LiveHlsPackager {
  readonly dir: string;
  /** Absolute path of index.m3u8 (absent until the first segment is published). */
  readonly playlistPath: string;
  /** Queues one FLV tag (an RTMP message body). Resolves once it is muxed, i.e. applies backpressure. */
  push(tag: FlvTag): Promise<void>;
  /** Flushes the last (short) segment and writes the playlist with EXT-X-ENDLIST. */
  end(): Promise<void>;
  info(): LiveHlsInfo;
}

export class HlsPackagerError extends Error {
  override readonly name = "HlsPackagerError";
  constructor(
    readonly field: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`live HLS ${field}: ${detail}`, options);
  }
}

const OWN_FILE = /^(index|master)\.m3u8$|^segment-\d+\.(ts|m4s)$|^init\.mp4$|\.tmp$/;

export function createLiveHlsPackager(options: LiveHlsPackagerOptions): LiveHlsPackager {
  const dir = resolve(options.dir);
  const { segmentSeconds, windowSegments, logger } = options;
  if (!(segmentSeconds > 0)) throw new HlsPackagerError("segmentSeconds", `must be > 0, got ${segmentSeconds}`);
  if (!Number.isInteger(windowSegments) || windowSegments < 1) {
    throw new HlsPackagerError("windowSegments", `must be a positive integer, got ${windowSegments}`);
  }
  const segmentFormat = options.segmentFormat ?? "mpegts";
  const files = options.files;
  const retention = createSegmentRetention({
    dir,
    remove: files ? (uri) => files.remove(uri) : undefined,
    graceSegments: options.graceSegments ?? windowSegments + 1,
    onError: (uri, err) => logger?.warn?.("live HLS: could not delete an old segment", { uri, error: String(err) }),
  });

  let phase: "probing" | "running" | "ended" | "failed" = "probing";
  let failure: HlsPackagerError | null = null;
  let output: Output | null = null;
  let videoSource: EncodedVideoPacketSource | null = null;
  let audioSource: EncodedAudioPacketSource | null = null;
  // Fixed at start(): mediabunny keeps the first decoder config for the whole output.
  let videoDecoderConfig: VideoTrackConfig["decoderConfig"] | null = null;
  let audioDecoderConfig: AudioTrackConfig["decoderConfig"] | null = null;

  // Real decode timestamps (seconds) of video packets handed to mediabunny, in order (see ts-dts-rewrite.ts).
  const dtsQueue: number[] = [];
  // Where segments may start (keyframes; every frame if audio-only) and when they arrived.
  const starts: Array<{ t: number; arrivalMs: number }> = [];
  let nextSegmentStart: number | null = null;
  let lastPublishedSequence = -1;
  let maxRoundedDuration = 0;
  let segmentsPublished = 0;

  const warned = new Map<string, number>();
  function warnOnce(key: string, message: string, fields?: Record<string, unknown>): void {
    const n = (warned.get(key) ?? 0) + 1;
    warned.set(key, n);
    if (n === 1) logger?.warn?.(`live HLS: ${message}`, fields);
  }
  const tracks = createLiveTracks({ probeMs: options.probeMs ?? 1000, warnOnce, logger });

  async function sink(request: TargetRequest, bytes: Uint8Array): Promise<void> {
    const path = resolve(dir, request.path);
    if (!path.startsWith(dir + sep)) throw new HlsPackagerError("path", `refusing to write outside ${dir}: ${request.path}`);
    const name = path.slice(dir.length + 1);
    if (name.endsWith(".ts") && videoDecoderConfig) {
      rewriteVideoDts(bytes, () => dtsQueue.shift());
    }
    const write = (data: Uint8Array | string) => (files ? files.write(name, typeof data === "string" ? new TextEncoder().encode(data) : data) : writeFileAtomic(path, data));
    if (name !== LIVE_HLS_PLAYLIST) {
      await write(bytes);
      return;
    }
    const playlist = parseMediaPlaylist(new TextDecoder().decode(bytes));
    const fresh = playlist.segments.filter((s) => s.sequence > lastPublishedSequence);
    for (const s of fresh) maxRoundedDuration = Math.max(maxRoundedDuration, Math.round(s.duration));
    const targetDuration = Math.max(Math.ceil(segmentSeconds), maxRoundedDuration);
    await write(withTargetDuration(new TextDecoder().decode(bytes), targetDuration));
    const publishedAtMs = Date.now();
    for (const s of fresh) {
      const start = nextSegmentStart ?? starts[0]?.t ?? 0;
      nextSegmentStart = start + s.duration;
      lastPublishedSequence = s.sequence;
      segmentsPublished++;
      const arrivalMs = takeStart(start) ?? publishedAtMs;
      try {
        options.onSegment?.({ uri: s.uri, durationSeconds: s.duration, sequence: s.sequence, firstKeyframeArrivalMs: arrivalMs, publishedAtMs });
      } catch (err) {
        logger?.warn?.("live HLS: onSegment callback threw", { error: String(err) });
      }
    }
  }

  /** Finds the start point nearest `t` and forgets it and everything before it. */
  function takeStart(t: number): number | null {
    let best = -1;
    for (let i = 0; i < starts.length; i++) {
      if (best < 0 || Math.abs(starts[i]!.t - t) < Math.abs(starts[best]!.t - t)) best = i;
      else if (starts[i]!.t > t) break;
    }
    if (best < 0) return null;
    const arrival = starts[best]!.arrivalMs;
    starts.splice(0, best + 1);
    return arrival;
  }

  async function prepareDir(): Promise<void> {
    await mkdir(dir, { recursive: true });
    // A previous broadcast's playlist would be served as this one's until our first segment.
    for (const name of await readdir(dir)) {
      if (OWN_FILE.test(name)) await unlink(join(dir, name)).catch(() => {});
    }
  }

  async function start(): Promise<void> {
    const { video, audio } = tracks.lock();
    videoDecoderConfig = video?.decoderConfig ?? null;
    audioDecoderConfig = audio?.decoderConfig ?? null;
    const format = segmentFormat === "cmaf" ? new CmafOutputFormat() : new MpegTsOutputFormat();
    output = new Output({
      format: new HlsOutputFormat({
        segmentFormat: format,
        targetDuration: segmentSeconds,
        live: true,
        maxLiveSegmentCount: windowSegments,
        getPlaylistPath: () => LIVE_HLS_PLAYLIST,
        getSegmentPath: ({ n }) => `segment-${n}${format.fileExtension}`,
        getInitPath: () => `init${segmentFormat === "cmaf" ? ".mp4" : format.fileExtension}`,
        onSegmentPopped: (path) => retention.popped(path),
      }),
      target: bufferedPathedTarget(LIVE_HLS_MASTER, sink),
    });
    if (video) {
      videoSource = new EncodedVideoPacketSource("avc");
      output.addVideoTrack(videoSource, { decoderConfig: video.decoderConfig });
    }
    if (audio) {
      audioSource = new EncodedAudioPacketSource("aac");
      output.addAudioTrack(audioSource, { decoderConfig: audio.decoderConfig });
    }
    await output.start();
    phase = "running";
    logger?.info?.("live HLS: started", { dir, video: video?.decoderConfig.codec ?? null, audio: audio?.decoderConfig.codec ?? null });
    const buffered = tracks.takeBuffered();
    for (const ev of buffered) await feed(ev);
  }

  async function feed(ev: MediaEvent): Promise<void> {
    const frame = tracks.frame(ev);
    if (!frame) return;
    if (frame.track === "video" && segmentFormat === "mpegts") dtsQueue.push(frame.dts); // consumed by the TS sink only
    if (frame.cutPoint) starts.push({ t: frame.t, arrivalMs: ev.arrivalMs });
    const packet = new EncodedPacket(frame.data, frame.isKeyframe ? "key" : "delta", frame.t, frame.duration);
    if (frame.track === "video") await videoSource!.add(packet, { decoderConfig: videoDecoderConfig! });
    else await audioSource!.add(packet, { decoderConfig: audioDecoderConfig! });
  }

  async function handle(tag: FlvTag, arrivalMs: number): Promise<void> {
    const media = takeTag(tag, arrivalMs, tracks, warnOnce);
    if (media === null) return;
    if (media !== "config") {
      if (phase === "running") return feed(media);
      tracks.buffer(media);
    }
    if (phase === "probing" && tracks.ready()) await start();
  }

  let queue: Promise<void> = (files ? files.prepare() : prepareDir()).catch((err) => {
    phase = "failed";
    failure = new HlsPackagerError("dir", `cannot prepare ${dir}: ${String(err)}`, { cause: err });
  });

  function enqueue(task: () => Promise<void>): Promise<void> {
    const run = queue.then(async () => {
      if (failure) throw failure;
      try {
        await task();
      } catch (err) {
        phase = "failed";
        failure = new HlsPackagerError("mux", err instanceof Error ? err.message : String(err), { cause: err });
        logger?.error?.("live HLS: packaging failed", { error: String(err) });
        await output?.cancel().catch(() => {});
        throw failure;
      }
    });
    queue = run.catch(() => {});
    return run;
  }

  return {
    dir,
    playlistPath: join(dir, LIVE_HLS_PLAYLIST),
    push(tag) {
      if (phase === "ended") return Promise.reject(new HlsPackagerError("state", "push after end()"));
      const arrivalMs = Date.now();
      return enqueue(() => handle(tag, arrivalMs));
    },
    end() {
      return enqueue(async () => {
        if (phase === "ended") return;
        if (phase === "probing") {
          if (!tracks.any()) {
            phase = "ended";
            // Tracks are final once probing ends: a sequence header queued behind end() is a late track.
            tracks.lock();
            return;
          }
          await start();
        }
        phase = "ended";
        await output!.finalize();
      });
    },
    info() {
      const { size, hasAudio, hasVideo, videoCodec, audioCodec } = tracks.info();
      return {
        width: size?.width ?? null,
        height: size?.height ?? null,
        resolution: size ? `${size.width}x${size.height}` : null,
        hasAudio,
        hasVideo,
        segments: segmentsPublished,
        videoCodec,
        audioCodec,
      };
    },
  };
}
