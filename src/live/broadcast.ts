import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { createFlvWriter, type FlvWriter } from "../../media/flv/flv-writer.ts";
import type { FlvTag } from "../../media/flv/flv-tag.ts";
import { createWebrtcFitCheck } from "../../media/flv/webrtc-fit.ts";
import { LIVE_HLS_LATENCY_PRESETS, type LiveHlsFileSink, type LiveHlsPackager, type LiveHlsSegmentInfo } from "../../media/hls/live-hls-packager.ts";
import { createLlHlsPackager, type LlHlsPartInfo } from "../../media/hls/ll-hls-packager.ts";
import { TimestampRebaser } from "../../media/hls/timestamp-rebaser.ts";
import type { Latency } from "../../machines/livestream-payload.ts";
import type { Logger } from "../log.ts";
import type { BroadcastContinuation } from "./live-files.ts";
import type { PartUploader } from "./recording-parts.ts";

/** Logged discontinuities per broadcast; further ones are only counted. */
const LOGGED_JUMPS = 5;
/**
 * Bytes of tags handed to the live HLS packager and not yet packaged (its
 * files uploaded) before it is skipped: about 10 s at 6 Mbps. A store slower
 * than that loses live HLS media (resumed at the next keyframe), never
 * holds the publisher (the recording and the other outputs go on).
 */
export const HLS_BACKLOG_BYTES = 8 * 1024 * 1024;

/**
 * One broadcast of a stream across its publish sessions: the FLV recording and
 * the live HLS packager stay open through a reconnect. Every tag's timestamp
 * goes through one TimestampRebaser before both of them, so a new session,
 * and any jump of the publisher's clock, continues where the output stopped,
 * and media time never outruns the wall clock by more than one segment.
 */
export function createBroadcast(opts: {
  streamId: string;
  latency: Latency;
  flvPath: string;
  hlsDir: string;
  /** Where the live HLS files go when not to `hlsDir` (the object store's uploads). */
  hlsFiles?: LiveHlsFileSink;
  /** With a remote store: uploads the FLV's growth as parts while on air (recording-parts.ts). */
  recordingParts?: PartUploader;
  logger: Logger;
  onSegment: (info: LiveHlsSegmentInfo) => void;
  /** Every LL-HLS part listed (the playlist was just written): blocking playlist reloads are answered at once. */
  onPart?: (info: LlHlsPartInfo) => void;
  /** HLS_BACKLOG_BYTES unless told (tests). */
  hlsBacklogBytes?: number;
  /**
   * Taken over from a process that died (issue 26): what its recording and
   * live playlist left, continued instead of started afresh (read once, at open).
   */
  continuation?: () => Promise<BroadcastContinuation>;
}) {
  const preset = LIVE_HLS_LATENCY_PRESETS[opts.latency];
  let writer: FlvWriter | undefined;
  let packager: LiveHlsPackager | undefined;
  const rebaser = new TimestampRebaser({ maxGapMs: 1000, maxLeadMs: preset.segmentSeconds * 1000 });
  let sessions = 0;
  let ended = false;
  const firstPublishAt = Date.now();
  let firstMediaAt: number | null = null;
  let leftAt: number | null = null;
  // Subscribers of the rebased tags (src/webrtc packetizes them for WHEP viewers), and what a late one needs first.
  const taps = new Set<BroadcastTap>();
  const headers = new Map<string, FlvTag>();
  // Whether WHEP viewers can get the encoder's H.264 as sent (src/webrtc re-encodes it when not: B-frames, 10-bit, interlaced).
  const webrtcFit = createWebrtcFitCheck();
  // The live HLS as a bounded output (issue 26): never awaited by the publisher; a lagging one skips to the next keyframe.
  const hlsLimit = opts.hlsBacklogBytes ?? HLS_BACKLOG_BYTES;
  const hls = { backlog: 0, skipping: false, skips: 0, resumes: 0, failure: null as unknown };
  function feedHls(t: FlvTag) {
    if (hls.failure) throw hls.failure;
    const size = t.payload.length;
    if (!isConfig(t)) {
      if (hls.skipping && (hls.backlog > hlsLimit / 2 || !isVideoKeyframe(t))) return;
      if (hls.skipping) {
        hls.skipping = false;
        hls.resumes++;
        opts.logger.info("Live HLS caught up; resumed at a keyframe", { stream_id: opts.streamId, skips: hls.skips });
      } else if (hls.backlog + size > hlsLimit) {
        hls.skipping = true;
        hls.skips++;
        opts.logger.warn("Live HLS lagging (a slow store); its media skipped to the next keyframe", { stream_id: opts.streamId, backlog_bytes: hls.backlog, skips: hls.skips });
        return;
      }
    }
    hls.backlog += size;
    packager!
      .push(t)
      .catch((err) => {
        hls.failure ??= err;
      })
      .finally(() => {
        hls.backlog -= size;
      });
  }
  /** The first of `end`/`abandon`: no more tags taken, held ones released, subscribers told. False when already stopped. */
  function stop(self: { markLeft(): void }): boolean {
    if (ended) return false;
    ended = true;
    self.markLeft();
    for (const release of [...holds]) release();
    for (const tap of [...taps]) tap.onEnd();
    taps.clear();
    return true;
  }
  // Tags held back to the wall clock; end() releases them at once.
  const holds = new Set<() => void>();
  const hold = (ms: number) =>
    new Promise<void>((resolve) => {
      const release = () => {
        clearTimeout(timer);
        holds.delete(release);
        resolve();
      };
      const timer = setTimeout(release, ms);
      holds.add(release);
    });

  async function open() {
    const continued = !writer && opts.continuation ? await opts.continuation() : null;
    if (!writer) {
      await mkdir(dirname(opts.flvPath), { recursive: true });
      const recording = continued?.recording;
      // The dead owner's timeline goes on: this process's first tag follows its last (one file, one clock).
      if (recording && recording.lastTimestampMs >= 0) rebaser.resumeAfter(recording.lastTimestampMs);
      writer = await createFlvWriter(opts.flvPath, { hasAudio: true, hasVideo: true, appendAt: recording?.appendAt });
      opts.recordingParts?.start(recording?.parts);
      if (continued)
        opts.logger.info("Broadcast taken over: recording and live playlist continued", {
          stream_id: opts.streamId,
          recording_from_byte: recording?.appendAt ?? null,
          recording_from_ms: recording?.lastTimestampMs ?? null,
          playlist_segments: continued.playlist?.segments.length ?? 0,
        });
    }
    // LL-HLS (issue 26): CMAF parts every 1/3 s inside the preset's segments (media/hls/ll-hls-packager.ts).
    packager ??= createLlHlsPackager({
      dir: opts.hlsDir,
      files: opts.hlsFiles,
      // A taken-over broadcast's playlist goes on (sequence numbers, a discontinuity) under file names of its own.
      ...(continued?.playlist ? { resume: { ...continued.playlist, prefix: `t${Date.now().toString(36)}-` } } : {}),
      ...preset,
      onSegment: (info) => opts.onSegment(info),
      onPart: (info) => opts.onPart?.(info),
      logger: {
        warn: (m, f) => opts.logger.warn(m, { ...f, stream_id: opts.streamId }),
        error: (m, f) => opts.logger.error(m, { ...f, stream_id: opts.streamId }),
      },
    });
  }

  return {
    segmentSeconds: preset.segmentSeconds,
    firstPublishAt,
    publishing: false,
    get sessions() {
      return sessions;
    },
    async startSession() {
      // Claimed before the first await, so a second encoder racing this one is refused.
      this.publishing = true;
      leftAt = null;
      await open();
      sessions++;
      rebaser.startSession();
    },
    /** The publisher of the current session is gone (the reconnect window starts now). */
    markLeft() {
      this.publishing = false;
      leftAt ??= Date.now();
    },
    async push(tag: FlvTag) {
      if (ended) return;
      const mapped = rebaser.map(tag, Date.now());
      if (mapped.discontinuity) {
        const n = rebaser.stats().discontinuities;
        if (n <= LOGGED_JUMPS) {
          opts.logger.info("Publisher timestamps re-based", { stream_id: opts.streamId, session: sessions, type: tag.type, input_ms: tag.timestamp, output_ms: mapped.timestamp, discontinuities: n });
        }
      }
      if (mapped.waitMs > 0) {
        // Faster than real time: slow the publisher down (TCP backpressure) rather than let media time run ahead.
        await hold(mapped.waitMs);
        if (ended) return;
      }
      if (tag.type !== "data") firstMediaAt ??= Date.now();
      const t: FlvTag = { ...tag, timestamp: mapped.timestamp };
      rememberHeader(headers, t);
      webrtcFit.observe(t);
      for (const tap of taps) {
        try {
          tap.onTag(t);
        } catch (err) {
          opts.logger.warn("Broadcast subscriber failed", { err, stream_id: opts.streamId });
          taps.delete(tap);
        }
      }
      feedHls(t);
      await writer!.write(t);
    },
    /**
     * Subscribes to the broadcast's tags as written (rebased timestamps), from
     * now on; `headers` are the last metadata and codec configurations seen,
     * which a decoder joining mid-stream needs first. Synchronous and cheap:
     * `onTag` runs on the ingest path. `onEnd` when the broadcast ends.
     */
    subscribe(tap: BroadcastTap): { headers: () => FlvTag[]; unsubscribe: () => void } {
      taps.add(tap);
      return { headers: () => [...headers.values()], unsubscribe: () => taps.delete(tap) };
    },
    /**
     * Wall-clock seconds on air: from the first publish until now, or until
     * the last publisher left (the reconnect window is not counted); null if
     * no media ever arrived.
     */
    durationSeconds(): number | null {
      if (firstMediaAt === null) return null;
      const until = this.publishing ? Date.now() : (leftAt ?? Date.now());
      return Math.max(0, Math.round((until - firstPublishAt) / 1000));
    },
    /** Whether the H.264 as published can go to WebRTC viewers (media/flv/webrtc-fit.ts); read by src/webrtc. */
    webrtcFit: () => webrtcFit.verdict(),
    timestampStats: () => rebaser.stats(),
    /** The live HLS output: bytes waiting to be packaged, how many times it fell behind (skipped) and picked up again at a keyframe. */
    hlsStats: () => ({ backlogBytes: hls.backlog, skips: hls.skips, resumes: hls.resumes }),
    info: () => packager?.info() ?? null,
    tagsWritten: () => writer?.tagsWritten ?? 0,
    /**
     * Another process took the broadcast over (this one stalled past its
     * lease): stop at once and write nothing more, neither the playlist (its
     * last part, ENDLIST) nor the recording's buffered tags nor a part, since
     * the files are the new owner's now. Idempotent with `end`.
     */
    async abandon() {
      if (!stop(this)) return;
      await writer?.abandon().catch(() => undefined);
      await opts.recordingParts?.stop().catch(() => undefined);
    },
    /**
     * Last segment + ENDLIST, and the recording closed and synced; the part
     * uploads stopped (an upload under way awaited). `uploadRest`: the FLV's
     * last bytes go up as a final part too (a graceful stop: the process
     * finalizing may have another disk). Idempotent.
     */
    async end(endOpts: { uploadRest?: boolean } = {}) {
      if (!stop(this)) return;
      await packager?.end().catch((err) => opts.logger.error("Cannot finish the live playlist", { err, stream_id: opts.streamId }));
      try {
        await writer?.close();
      } finally {
        await opts.recordingParts
          ?.stop({ rest: endOpts.uploadRest === true && writer !== undefined })
          .catch((err) => opts.logger.warn("Cannot upload the recording's last part", { err, stream_id: opts.streamId }));
      }
    },
  };
}

export type Broadcast = ReturnType<typeof createBroadcast>;

export interface BroadcastTap {
  onTag(tag: FlvTag): void;
  onEnd(): void;
}

/** Metadata or a codec configuration: never skipped (the packager needs them to read what follows). */
function isConfig(tag: FlvTag): boolean {
  const p = tag.payload;
  return tag.type === "data" || (tag.type === "video" && (p[0]! & 0x0f) === 7 && p[1] === 0) || (tag.type === "audio" && p[0]! >> 4 === 10 && p[1] === 0);
}

/** An H.264 keyframe (FLV frame type 1, AVC NALU): where a skipped output picks up again. */
function isVideoKeyframe(tag: FlvTag): boolean {
  const p = tag.payload;
  return tag.type === "video" && p[0]! >> 4 === 1 && (p[0]! & 0x0f) === 7 && p[1] === 1;
}

/** Metadata and the AVC / AAC sequence headers (the codec configurations), kept by kind, latest wins. */
function rememberHeader(headers: Map<string, FlvTag>, tag: FlvTag) {
  const p = tag.payload;
  if (tag.type === "data") headers.set("data", tag);
  else if (tag.type === "video" && (p[0]! & 0x0f) === 7 && p[1] === 0) headers.set("video", tag);
  else if (tag.type === "audio" && p[0]! >> 4 === 10 && p[1] === 0) headers.set("audio", tag);
}
