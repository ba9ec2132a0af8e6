/**
 * One timeline for a live broadcast, whatever the publisher's clock does.
 *
 * Encoders' FLV timestamps are trusted only as deltas between neighbouring
 * frames of a track. A step that goes backwards, or forwards by more than
 * `maxGapMs`, is a discontinuity (a clock jump, an encoder restart, a wrap):
 * the track continues one frame after the furthest timestamp already sent, so
 * output never goes back and never skips ahead. A new publish session (a
 * reconnect) starts the same way. The offset is shared by audio and video, so
 * a jump of both tracks is absorbed once and A/V stay aligned.
 *
 * Output is also held to the wall clock: a tag whose output timestamp runs
 * more than `maxLeadMs` ahead of the time elapsed since the first tag gets a
 * `waitMs` (the caller delays it, which slows the publisher through TCP
 * backpressure, like ffmpeg's `-re`). Small forward steps that each pass the
 * gap rule therefore still cannot make media time outrun real time.
 *
 * Pure: no timers, no I/O; the caller passes the arrival time.
 */

export interface RebaserOptions {
  /** A forward step larger than this (beyond the previous frame of the track) is a discontinuity. Default 1000. */
  maxGapMs?: number;
  /** How far output may run ahead of the wall clock before tags are held back. Default 2000. */
  maxLeadMs?: number;
}

export interface RebasedTimestamp {
  /** Output timestamp (ms), continuous and, per track, never decreasing. */
  timestamp: number;
  /** How long to hold the tag back so media time stays within `maxLeadMs` of the wall clock. */
  waitMs: number;
  /** True when this tag started a new base (a jump, or the first tag of a reconnect). */
  discontinuity: boolean;
}

export interface RebaserStats {
  discontinuities: number;
  /** Furthest output timestamp so far (ms), -1 before any media. */
  lastOutputMs: number;
}

type Track = "audio" | "video";

/** Typical frame lengths used until a track's own cadence is seen: 30 fps video, 1024-sample AAC at 44.1 kHz. */
const DEFAULT_FRAME_MS: Record<Track, number> = { video: 33, audio: 23 };
/** Steps above this are not taken as the track's frame length (a stall within the gap rule). */
const MAX_FRAME_MS = 250;

export class TimestampRebaser {
  private readonly maxGapMs: number;
  private readonly maxLeadMs: number;
  private offset = 0;
  private maxOut = -1;
  private freshSession = true;
  private wallStart: number | null = null;
  /** Media time already output before this instance (a continued recording): the wall clock rule starts there. */
  private wallBias = 0;
  private readonly lastOut = new Map<Track, number>();
  private readonly frameMs: Record<Track, number> = { ...DEFAULT_FRAME_MS };
  private discontinuities = 0;

  constructor(options: RebaserOptions = {}) {
    this.maxGapMs = options.maxGapMs ?? 1000;
    this.maxLeadMs = options.maxLeadMs ?? 2000;
  }

  /** The next tag begins a new publish session: it continues one frame after the last output. */
  startSession(): void {
    this.freshSession = true;
  }

  /**
   * Continue a timeline output elsewhere (a broadcast taken over after its
   * owner died): the next tag goes one frame after `lastOutputMs`, as a new
   * session, and media time up to there counts as already elapsed.
   */
  resumeAfter(lastOutputMs: number): void {
    this.maxOut = Math.max(this.maxOut, lastOutputMs);
    this.wallBias = Math.max(0, lastOutputMs);
    this.freshSession = true;
  }

  stats(): RebaserStats {
    return { discontinuities: this.discontinuities, lastOutputMs: this.maxOut };
  }

  map(tag: { type: string; timestamp: number }, nowMs: number): RebasedTimestamp {
    if (tag.type !== "audio" && tag.type !== "video") {
      // Script data (onMetaData) sits at the current position; it is not a track.
      return { timestamp: Math.max(0, this.maxOut), waitMs: 0, discontinuity: false };
    }
    const track: Track = tag.type;
    this.wallStart ??= nowMs - this.wallBias;
    let discontinuity = false;
    if (this.freshSession) {
      this.freshSession = false;
      discontinuity = this.maxOut >= 0;
      this.offset = this.continuation(track) - tag.timestamp;
    } else {
      const previous = this.lastOut.get(track);
      const candidate = tag.timestamp + this.offset;
      // Per track, output never goes back (across sessions too) nor below 0; a track's first
      // tag is judged against the other track's position for the forward rule.
      const backwards = candidate < (previous ?? 0);
      const step = candidate - (previous ?? this.maxOut);
      if (backwards || step > this.maxGapMs) {
        discontinuity = true;
        this.offset = this.continuation(track) - tag.timestamp;
      } else if (previous !== undefined && step > 0 && step <= MAX_FRAME_MS) {
        this.frameMs[track] = step;
      }
    }
    if (discontinuity) this.discontinuities++;
    const timestamp = tag.timestamp + this.offset;
    this.lastOut.set(track, timestamp);
    this.maxOut = Math.max(this.maxOut, timestamp);
    const waitMs = Math.max(0, timestamp - (nowMs - this.wallStart) - this.maxLeadMs);
    return { timestamp, waitMs, discontinuity };
  }

  /** Where a new base puts the next tag of `track`: one frame after the furthest output (0 at the very start). */
  private continuation(track: Track): number {
    return this.maxOut < 0 ? 0 : this.maxOut + this.frameMs[track];
  }
}
