import { mkdir, readdir, unlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { FlvTag } from "../flv/flv-tag.ts";
import { writeFileAtomic } from "./atomic-write.ts";
import { type Fmp4Sample, type Fmp4Track, fragment, initSegment, VIDEO_TIMESCALE } from "./fmp4.ts";
import { HlsPackagerError, LIVE_HLS_PLAYLIST, type LiveHlsInfo, type LiveHlsPackager, type LiveHlsPackagerOptions } from "./live-hls-packager.ts";
import { takeTag } from "./tag-intake.ts";
import { createLiveTracks, type MediaEvent, type TimedFrame } from "./live-tracks.ts";
import { type LlPart, type LlSegment, renderLlPlaylist } from "./ll-playlist.ts";

/** LL-HLS part target (seconds): ten frames at 30 fps (FLV's 33/34 ms steps sum to at most 334 ms). */
export const LL_HLS_PART_SECONDS = 0.334;

export interface LlHlsPartInfo {
  /** Media sequence number of the part's segment and the part's index in it. */
  sequence: number;
  part: number;
  durationSeconds: number;
  /** Date.now() when the part's first frame was pushed. */
  firstFrameArrivalMs: number;
  /** Date.now() right after the playlist listing the part was written. */
  publishedAtMs: number;
}

export interface LlHlsPackagerOptions extends Omit<LiveHlsPackagerOptions, "segmentFormat"> {
  /** PART-TARGET; parts never exceed it. Default LL_HLS_PART_SECONDS; at most 0.5 s here. */
  partSeconds?: number;
  /** Every playlist write (a new part, maybe a new segment): blocking playlist reloads are answered from here. */
  onPart?: (info: LlHlsPartInfo) => void;
  /**
   * Continue a playlist another process left (its owner died, parseLlPlaylist):
   * its segments stay listed, sequence numbers go on after the last one, the
   * first new segment starts a discontinuity with its own init segment, and
   * every new file is named with `prefix` so none of the old ones (an
   * unfinished segment's parts included) is overwritten. Nothing is cleaned up first.
   */
  resume?: { segments: LlSegment[]; discontinuitySequence: number; prefix: string };
}

const OWN_FILE = /^(index|master)\.m3u8$|^(t[0-9a-z]+-)?(segment|part)-[\d-]+\.(ts|m4s)$|^(t[0-9a-z]+-)?init\.mp4$|\.tmp$/;
/** Complete segments whose parts stay listed (RFC 8216bis 6.2.2: at least those within 3 target durations... of the end, here 2 segments + the open one). */
const SEGMENTS_WITH_PARTS = 2;

/**
 * Live HLS with low-latency parts (RFC 8216bis, "LL-HLS") from FLV tags, no
 * re-encode: CMAF (fMP4) fragments cut every `partSeconds` on any frame
 * (`part-<msn>-<n>.m4s`, INDEPENDENT=YES when they start on a keyframe),
 * segments of `segmentSeconds` cut on keyframes (`segment-<msn>.m4s`, the
 * concatenation of their parts, for players without LL-HLS), one init
 * segment `init.mp4`, and `index.m3u8` rewritten at every part with
 * EXT-X-SERVER-CONTROL, EXT-X-PART-INF, EXT-X-PART and EXT-X-PRELOAD-HINT.
 * Same interface and file order as createLiveHlsPackager: every file is
 * written (or handed to `files`) before the playlist naming it.
 */
export function createLlHlsPackager(options: LlHlsPackagerOptions): LiveHlsPackager {
  const dir = resolve(options.dir);
  const { segmentSeconds, windowSegments, logger, files } = options;
  const partSeconds = options.partSeconds ?? LL_HLS_PART_SECONDS;
  if (!(segmentSeconds > 0)) throw new HlsPackagerError("segmentSeconds", `must be > 0, got ${segmentSeconds}`);
  if (!(partSeconds > 0 && partSeconds <= 0.5 && partSeconds < segmentSeconds)) throw new HlsPackagerError("partSeconds", `must be in (0, 0.5] and below segmentSeconds, got ${partSeconds}`);
  if (!Number.isInteger(windowSegments) || windowSegments < 1) throw new HlsPackagerError("windowSegments", `must be a positive integer, got ${windowSegments}`);
  const graceSegments = options.graceSegments ?? windowSegments + 1;

  let phase: "probing" | "running" | "ended" | "failed" = "probing";
  let failure: HlsPackagerError | null = null;
  const warned = new Map<string, number>();
  function warnOnce(key: string, message: string, fields?: Record<string, unknown>): void {
    const n = (warned.get(key) ?? 0) + 1;
    warned.set(key, n);
    if (n === 1) logger?.warn?.(`live HLS: ${message}`, fields);
  }
  const tracks = createLiveTracks({ probeMs: options.probeMs ?? 1000, warnOnce, logger });

  let videoTrack: Fmp4Track | null = null;
  let audioTrack: Fmp4Track | null = null;
  let audioFrameTicks = 1024;
  // The open part: its samples per track, where it starts (seconds, the leading track's DTS) and whether on a keyframe.
  let part: { video: Fmp4Sample[]; audio: Fmp4Sample[]; start: number; independent: boolean; arrivalMs: number } | null = null;
  // The open segment's closed parts (bytes kept: the segment file is their concatenation).
  let openParts: Array<LlPart & { bytes: Uint8Array }> = [];
  let segmentStart = 0;
  let segmentArrivalMs = 0;
  let msn = 0;
  let fragmentSequence = 1;
  let lastAudioDts: number | null = null;
  let maxRoundedDuration = 0;
  const listed: LlSegment[] = [];
  const leaving: LlSegment[] = [];
  let segmentsPublished = 0;
  const resume = options.resume;
  const prefix = resume?.prefix ?? "";
  const initUri = `${prefix}init.mp4`;
  let discontinuitySequence = resume?.discontinuitySequence ?? 0;
  // The first segment of this packager starts a discontinuity when it continues another's playlist.
  let joining = resume !== undefined && resume.segments.length > 0;
  if (resume) {
    listed.push(...resume.segments.slice(-windowSegments));
    msn = (resume.segments.at(-1)?.sequence ?? -1) + 1;
    maxRoundedDuration = Math.max(0, ...resume.segments.map((x) => Math.round(x.duration)));
  }

  const write = (name: string, data: Uint8Array | string) => (files ? files.write(name, typeof data === "string" ? new TextEncoder().encode(data) : data) : writeFileAtomic(join(dir, name), data));
  const remove = (name: string) =>
    (files ? files.remove(name) : unlink(join(dir, name))).catch((err) => {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") logger?.warn?.("live HLS: could not delete an old file", { name, error: String(err) });
    });

  async function start(): Promise<void> {
    const { video, audio } = tracks.lock();
    if (video) {
      videoTrack = { id: 1, kind: "video", timescale: VIDEO_TIMESCALE, config: video.avc.record, width: video.sps.width, height: video.sps.height };
    }
    if (audio) {
      const rate = audio.decoderConfig.sampleRate;
      audioTrack = { id: 2, kind: "audio", timescale: rate, config: audio.aac.description, channels: audio.decoderConfig.numberOfChannels, sampleRate: rate };
      audioFrameTicks = Math.round(audio.frameDuration * rate);
    }
    await write(initUri, initSegment([videoTrack, audioTrack].filter((t): t is Fmp4Track => t !== null)));
    phase = "running";
    logger?.info?.("live HLS: started (LL-HLS, CMAF)", { dir, video: video?.decoderConfig.codec ?? null, audio: audio?.decoderConfig.codec ?? null, part_seconds: partSeconds });
    for (const ev of tracks.takeBuffered()) await feed(ev);
  }

  /** The leading track: video when there is one (parts and segments are cut on its frames), else audio. */
  const leads = (f: TimedFrame) => (videoTrack ? f.track === "video" : true);

  async function feed(ev: MediaEvent): Promise<void> {
    const f = tracks.frame(ev);
    if (!f) return;
    if (leads(f)) {
      if (part) {
        const segmentDone = f.cutPoint && f.dts - segmentStart >= segmentSeconds - 1e-3;
        const partFull = f.dts + f.duration - part.start > partSeconds + 1e-6;
        if (segmentDone || partFull) await closePart(f.dts, segmentDone);
      }
      if (!part) {
        if (openParts.length === 0) {
          segmentStart = f.dts;
          segmentArrivalMs = ev.arrivalMs;
        }
        part = { video: [], audio: [], start: f.dts, independent: f.isKeyframe, arrivalMs: ev.arrivalMs };
      }
    }
    if (!part) return; // audio before the first video frame of the stream
    if (f.track === "video") {
      const dts = Math.round(f.dts * VIDEO_TIMESCALE);
      const prev = part.video[part.video.length - 1];
      if (prev) prev.duration = dts - prev.dts;
      part.video.push({ data: f.data, dts, duration: Math.round(f.duration * VIDEO_TIMESCALE), cto: Math.round(f.t * VIDEO_TIMESCALE) - dts, isKeyframe: f.isKeyframe });
    } else {
      const rate = audioTrack!.timescale;
      // Audio runs on its own sample clock (FLV's whole milliseconds would jitter it), re-synced after a gap over 50 ms.
      const flvDts = Math.round(f.dts * rate);
      const dts = lastAudioDts !== null && Math.abs(lastAudioDts + audioFrameTicks - flvDts) <= rate / 20 ? lastAudioDts + audioFrameTicks : flvDts;
      part.audio.push({ data: f.data, dts, duration: audioFrameTicks, cto: 0, isKeyframe: true });
      lastAudioDts = dts;
    }
  }

  /** Closes the open part at `end` (seconds, leading track); with `segmentDone` its segment too; then the playlist. */
  async function closePart(end: number, segmentDone: boolean): Promise<void> {
    const p = part!;
    part = null;
    // The last frame lasts until the next part's first (known now): no gap or overlap between parts.
    const last = p.video[p.video.length - 1];
    if (last && videoTrack) last.duration = Math.max(1, Math.round(end * VIDEO_TIMESCALE) - last.dts);
    const trackSamples = [...(videoTrack ? [{ track: videoTrack, samples: p.video }] : []), ...(audioTrack ? [{ track: audioTrack, samples: p.audio }] : [])];
    const bytes = fragment(fragmentSequence++, trackSamples);
    const index = openParts.length;
    const uri = `${prefix}part-${msn}-${index}.m4s`;
    const duration = Math.max(0.001, end - p.start);
    openParts.push({ uri, duration, independent: p.independent, bytes });
    // The part and the segment it completes are independent files: written together, both before the playlist.
    await Promise.all([write(uri, bytes), segmentDone ? closeSegment() : null]);
    const playlist = renderLlPlaylist({
      targetDuration: Math.max(Math.ceil(segmentSeconds), maxRoundedDuration),
      partTarget: partSeconds,
      segments: listed,
      partsFrom: Math.max(0, listed.length - SEGMENTS_WITH_PARTS),
      openParts: phase === "ended" ? [] : openParts,
      openMsn: msn,
      ended: phase === "ended",
      discontinuitySequence,
      initUri,
      openDiscontinuity: joining,
      partPrefix: prefix,
    });
    await write(LIVE_HLS_PLAYLIST, playlist);
    const publishedAtMs = Date.now();
    const info = segmentDone ? { sequence: msn - 1, part: index } : { sequence: msn, part: index };
    try {
      options.onPart?.({ ...info, durationSeconds: duration, firstFrameArrivalMs: p.arrivalMs, publishedAtMs });
      if (segmentDone) {
        const s = listed[listed.length - 1]!;
        options.onSegment?.({ uri: s.uri, durationSeconds: s.duration, sequence: s.sequence, firstKeyframeArrivalMs: segmentArrivalMs, publishedAtMs });
      }
    } catch (err) {
      logger?.warn?.("live HLS: a listener threw", { error: String(err) });
    }
  }

  async function closeSegment(): Promise<void> {
    const parts = openParts;
    openParts = [];
    const total = parts.reduce((n, p) => n + p.bytes.length, 0);
    const bytes = new Uint8Array(total);
    let o = 0;
    for (const p of parts) {
      bytes.set(p.bytes, o);
      o += p.bytes.length;
    }
    const uri = `${prefix}segment-${msn}.m4s`;
    await write(uri, bytes);
    const duration = parts.reduce((n, p) => n + p.duration, 0);
    maxRoundedDuration = Math.max(maxRoundedDuration, Math.round(duration));
    const segment: LlSegment = { uri, sequence: msn, duration, parts: parts.map(({ uri, duration, independent }) => ({ uri, duration, independent })), map: initUri };
    if (joining) segment.discontinuity = true;
    joining = false;
    listed.push(segment);
    msn++;
    segmentsPublished++;
    while (listed.length > windowSegments) {
      const left = listed.shift()!;
      if (left.discontinuity) discontinuitySequence++;
      leaving.push(left);
    }
    // RFC 8216 6.2.2: a segment that left the playlist stays available a while (a player may hold the previous playlist).
    while (leaving.length > graceSegments) {
      const gone = leaving.shift()!;
      for (const name of [gone.uri, ...gone.parts.map((p) => p.uri)]) void remove(name);
    }
  }

  async function prepareDir(): Promise<void> {
    await mkdir(dir, { recursive: true });
    for (const name of await readdir(dir)) {
      if (OWN_FILE.test(name)) await unlink(join(dir, name)).catch(() => {});
    }
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

  let queue: Promise<void> = (resume ? (files ? Promise.resolve() : mkdir(dir, { recursive: true }).then(() => undefined)) : files ? files.prepare() : prepareDir()).catch((err) => {
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
            tracks.lock();
            return;
          }
          await start();
        }
        phase = "ended";
        if (part) {
          const lead = videoTrack ? part.video[part.video.length - 1] : part.audio[part.audio.length - 1];
          const end = lead ? (lead.dts + lead.duration) / (videoTrack ? VIDEO_TIMESCALE : audioTrack!.timescale) : part.start;
          await closePart(end, true);
        }
      });
    },
    info(): LiveHlsInfo {
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
