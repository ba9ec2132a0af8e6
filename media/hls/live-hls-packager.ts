import { mkdir, readdir, unlink } from "node:fs/promises";
import { join, resolve, sep } from "node:path";
import { CmafOutputFormat, EncodedAudioPacketSource, EncodedPacket, EncodedVideoPacketSource, HlsOutputFormat, MpegTsOutputFormat, Output, type TargetRequest } from "mediabunny";
import type { FlvTag } from "../flv/flv-tag.ts";
import { writeFileAtomic } from "./atomic-write.ts";
import { bufferedPathedTarget } from "./buffered-pathed-target.ts";
import { flvMediaEvent, type FlvMediaEvent } from "./flv-media-event.ts";
import { parseMediaPlaylist, withTargetDuration } from "./media-playlist.ts";
import { createSegmentRetention } from "./segment-retention.ts";
import { audioTrackConfig, sameBytes, videoTrackConfig, type AudioTrackConfig, type VideoTrackConfig } from "./track-config.ts";
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

export interface LiveHlsPackagerOptions {
  /** Created if missing. Stale playlists/segments of a previous run are removed. */
  dir: string;
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

type MediaEvent = Extract<FlvMediaEvent, { kind: "video" | "audio" }> & { arrivalMs: number };

const OWN_FILE = /^(index|master)\.m3u8$|^segment-\d+\.(ts|m4s)$|^init\.mp4$|\.tmp$/;
const PROBE_MAX_EVENTS = 2000;

export function createLiveHlsPackager(options: LiveHlsPackagerOptions): LiveHlsPackager {
  const dir = resolve(options.dir);
  const { segmentSeconds, windowSegments, logger } = options;
  if (!(segmentSeconds > 0)) throw new HlsPackagerError("segmentSeconds", `must be > 0, got ${segmentSeconds}`);
  if (!Number.isInteger(windowSegments) || windowSegments < 1) {
    throw new HlsPackagerError("windowSegments", `must be a positive integer, got ${windowSegments}`);
  }
  const segmentFormat = options.segmentFormat ?? "mpegts";
  const probeMs = options.probeMs ?? 1000;
  const retention = createSegmentRetention({
    dir,
    graceSegments: options.graceSegments ?? windowSegments + 1,
    onError: (uri, err) => logger?.warn?.("live HLS: could not delete an old segment", { uri, error: String(err) }),
  });

  let phase: "probing" | "running" | "ended" | "failed" = "probing";
  let failure: HlsPackagerError | null = null;
  let video: VideoTrackConfig | null = null;
  let audio: AudioTrackConfig | null = null;
  let withVideo = false;
  let withAudio = false;
  let output: Output | null = null;
  let videoSource: EncodedVideoPacketSource | null = null;
  let audioSource: EncodedAudioPacketSource | null = null;
  const probe: MediaEvent[] = [];

  // Timeline: FLV milliseconds minus baseMs become mediabunny seconds.
  let baseMs: number | null = null;
  let firstKeyPtsMs = 0;
  let lastVideoDtsMs = -Infinity;
  let videoPtsMax = -Infinity;
  let videoPtsMaxBeforeKey = -Infinity;
  let lastAudioMs = -Infinity;
  let videoFrameSeconds = 1 / 30;
  // The NAL length size mediabunny parses with vs. the one packets currently use
  // (they differ only if a mid-stream sequence header changed it).
  let muxNalLengthSize = 4;
  let packetNalLengthSize = 4;
  let inbandParameterSets: Uint8Array[] | null = null;
  // Picture size after a mid-stream change (info() reports what is being sent now).
  let currentSize: { width: number; height: number } | null = null;

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

  async function sink(request: TargetRequest, bytes: Uint8Array): Promise<void> {
    const path = resolve(dir, request.path);
    if (!path.startsWith(dir + sep)) throw new HlsPackagerError("path", `refusing to write outside ${dir}: ${request.path}`);
    const name = path.slice(dir.length + 1);
    if (name.endsWith(".ts") && withVideo) {
      rewriteVideoDts(bytes, () => dtsQueue.shift());
    }
    if (name !== LIVE_HLS_PLAYLIST) {
      await writeFileAtomic(path, bytes);
      return;
    }
    const playlist = parseMediaPlaylist(new TextDecoder().decode(bytes));
    const fresh = playlist.segments.filter((s) => s.sequence > lastPublishedSequence);
    for (const s of fresh) maxRoundedDuration = Math.max(maxRoundedDuration, Math.round(s.duration));
    const targetDuration = Math.max(Math.ceil(segmentSeconds), maxRoundedDuration);
    await writeFileAtomic(path, withTargetDuration(new TextDecoder().decode(bytes), targetDuration));
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

  function onVideoConfig(record: Uint8Array): void {
    let config: VideoTrackConfig;
    try {
      config = videoTrackConfig(record);
    } catch (err) {
      warnOnce("bad-video-config", "unusable AVC sequence header, ignored", { error: String(err) });
      return;
    }
    if (phase === "probing") {
      video = config;
      return;
    }
    if (!withVideo) {
      warnOnce("late-video", "video started after the stream was set up audio-only; video ignored");
      return;
    }
    if (sameBytes(config.avc.record, video!.avc.record)) return;
    // mediabunny keeps the first decoder config for the whole output. For TS it
    // prepends that SPS/PPS to every keyframe; putting the new ones after them
    // in-band makes decoders use the new ones (the last SPS/PPS with an id wins).
    const old = video!;
    if (config.sps.width !== old.sps.width || config.sps.height !== old.sps.height) {
      warnOnce("resolution-change", "resolution changed mid-stream; some players will not follow", {
        from: `${old.sps.width}x${old.sps.height}`,
        to: `${config.sps.width}x${config.sps.height}`,
      });
    } else {
      logger?.info?.("live HLS: AVC sequence header changed mid-stream; sending new SPS/PPS in-band");
    }
    packetNalLengthSize = config.avc.nalLengthSize;
    inbandParameterSets = [...config.avc.sps, ...config.avc.pps];
    video = { ...config, decoderConfig: old.decoderConfig };
    currentSize = { width: config.sps.width, height: config.sps.height };
  }

  function onAudioConfig(asc: Uint8Array): void {
    let config: AudioTrackConfig;
    try {
      config = audioTrackConfig(asc);
    } catch (err) {
      warnOnce("bad-audio-config", "unusable AAC sequence header, ignored", { error: String(err) });
      return;
    }
    if (phase === "probing") {
      audio = config;
      return;
    }
    if (!withAudio) {
      warnOnce("late-audio", "audio started after the stream was set up video-only; audio ignored");
      return;
    }
    if (!sameBytes(config.aac.description, audio!.aac.description)) {
      warnOnce("audio-config-change", "AAC config changed mid-stream; keeping the first one", {
        from: audio!.decoderConfig.codec,
        to: config.decoderConfig.codec,
      });
    }
  }

  function shouldStart(): boolean {
    if (video && audio) return true;
    if (!video && !audio) return false;
    const first = probe[0];
    const last = probe[probe.length - 1];
    return !!first && !!last && (last.dtsMs - first.dtsMs >= probeMs || probe.length >= PROBE_MAX_EVENTS);
  }

  async function start(): Promise<void> {
    withVideo = !!video;
    withAudio = !!audio;
    if (video) muxNalLengthSize = packetNalLengthSize = video.avc.nalLengthSize;
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
    const buffered = probe.splice(0);
    for (const ev of buffered) await feed(ev);
  }

  async function feed(ev: MediaEvent): Promise<void> {
    if (ev.kind === "video") {
      if (!withVideo || !videoSource || !video) return;
      if (baseMs === null) {
        if (!ev.isKeyframe) return; // nothing decodable before the first keyframe
        baseMs = ev.dtsMs;
        firstKeyPtsMs = ev.ptsMs;
      }
      // mediabunny rejects (and we would corrupt the stream with) time going backwards.
      if (ev.dtsMs < lastVideoDtsMs) {
        return warnOnce("video-dts-backwards", "video timestamp went backwards; frame dropped", { dtsMs: ev.dtsMs, lastVideoDtsMs });
      }
      const floor = ev.isKeyframe ? videoPtsMax : videoPtsMaxBeforeKey;
      if (ev.ptsMs < floor) {
        return warnOnce("video-pts-gop", "frame shown before the previous GOP ended (open GOP?); dropped", { ptsMs: ev.ptsMs });
      }
      if (ev.isKeyframe) videoPtsMaxBeforeKey = videoPtsMax;
      videoPtsMax = Math.max(videoPtsMax, ev.ptsMs);
      if (ev.dtsMs > lastVideoDtsMs && lastVideoDtsMs > -Infinity) videoFrameSeconds = (ev.dtsMs - lastVideoDtsMs) / 1000;
      lastVideoDtsMs = ev.dtsMs;

      let data = ev.data;
      if (packetNalLengthSize !== muxNalLengthSize || (ev.isKeyframe && inbandParameterSets)) {
        data = reframe(data, packetNalLengthSize, muxNalLengthSize, ev.isKeyframe ? inbandParameterSets : null);
      }
      const t = (ev.ptsMs - baseMs) / 1000;
      if (segmentFormat === "mpegts") dtsQueue.push((ev.dtsMs - baseMs) / 1000); // consumed by the TS sink only
      if (ev.isKeyframe) starts.push({ t, arrivalMs: ev.arrivalMs });
      await videoSource.add(new EncodedPacket(data, ev.isKeyframe ? "key" : "delta", t, videoFrameSeconds), {
        decoderConfig: video.decoderConfig,
      });
      return;
    }
    if (!withAudio || !audioSource || !audio) return;
    if (withVideo) {
      // Audio before the first keyframe would start the first segment without a picture.
      if (baseMs === null || ev.dtsMs < firstKeyPtsMs) return;
    } else {
      baseMs ??= ev.dtsMs;
    }
    if (ev.dtsMs < lastAudioMs) {
      return warnOnce("audio-backwards", "audio timestamp went backwards; frame dropped", { dtsMs: ev.dtsMs, lastAudioMs });
    }
    lastAudioMs = ev.dtsMs;
    const t = (ev.dtsMs - baseMs) / 1000;
    if (!withVideo) starts.push({ t, arrivalMs: ev.arrivalMs });
    await audioSource.add(new EncodedPacket(ev.data, "key", t, audio.frameDuration), { decoderConfig: audio.decoderConfig });
  }

  async function handle(tag: FlvTag, arrivalMs: number): Promise<void> {
    let ev: FlvMediaEvent;
    try {
      ev = flvMediaEvent(tag);
    } catch (err) {
      const name = err instanceof Error ? err.name : "Error";
      return warnOnce(`tag-${name}`, `${tag.type} tag not usable, dropped (further ones are dropped silently)`, {
        error: String(err),
      });
    }
    switch (ev.kind) {
      case "ignored":
        return;
      case "video-config":
        onVideoConfig(ev.record);
        break;
      case "audio-config":
        onAudioConfig(ev.asc);
        break;
      default: {
        // RTMP servers reuse buffers; mediabunny holds packets until their segment is written.
        const media: MediaEvent = { ...ev, data: ev.data.slice(), arrivalMs };
        if (phase === "running") return feed(media);
        probe.push(media);
        if (probe.length > PROBE_MAX_EVENTS && !video && !audio) probe.shift();
      }
    }
    if (phase === "probing" && shouldStart()) await start();
  }

  let queue: Promise<void> = prepareDir().catch((err) => {
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
          if (!video && !audio) {
            phase = "ended";
            return;
          }
          await start();
        }
        phase = "ended";
        await output!.finalize();
      });
    },
    info() {
      const size = currentSize ?? (video ? { width: video.sps.width, height: video.sps.height } : null);
      return {
        width: size?.width ?? null,
        height: size?.height ?? null,
        resolution: size ? `${size.width}x${size.height}` : null,
        hasAudio: phase === "probing" ? !!audio : withAudio,
        hasVideo: phase === "probing" ? !!video : withVideo,
        segments: segmentsPublished,
        videoCodec: video?.decoderConfig.codec ?? null,
        audioCodec: audio?.decoderConfig.codec ?? null,
      };
    },
  };
}

/** Re-frames length-prefixed NAL units to another prefix size, optionally prepending parameter sets. */
function reframe(data: Uint8Array, fromSize: number, toSize: number, prepend: Uint8Array[] | null): Uint8Array {
  const units: Uint8Array[] = [...(prepend ?? [])];
  let o = 0;
  while (o + fromSize <= data.length) {
    let len = 0;
    for (let i = 0; i < fromSize; i++) len = len * 256 + data[o + i]!;
    o += fromSize;
    units.push(data.subarray(o, Math.min(o + len, data.length)));
    o += len;
  }
  const out = new Uint8Array(units.reduce((n, u) => n + toSize + u.length, 0));
  let w = 0;
  for (const u of units) {
    for (let i = toSize - 1; i >= 0; i--) out[w++] = Math.floor(u.length / 256 ** i) & 0xff;
    out.set(u, w);
    w += u.length;
  }
  return out;
}
