/** Beacon event types (issue 28), exact. */
export const EVENT_TYPES = ["viewstart", "playing", "pause", "seeking", "seeked", "waiting", "rendition_change", "error", "ended", "heartbeat", "viewend"] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** One event as stored and as the figures read it. */
export interface ViewEvent {
  type: EventType;
  /** The player's clock (epoch ms): only differences within one view are used. */
  t: number;
  playerTime: number;
  height: number | null;
  bitrate: number | null;
  code: string | null;
  startupMs: number | null;
}

/** The figures of one closed view. */
export interface ViewFigures {
  watchMs: number;
  /** From `viewstart` to the first frame (`startup_ms` of the first `playing`, else the difference of their times); null if it never started. */
  startupMs: number | null;
  stallCount: number;
  stallMs: number;
  /** Time-weighted over watched time; null without a `rendition_change`. */
  avgBitrate: number | null;
  avgHeight: number | null;
  errors: number;
  exitBeforeStart: boolean;
}
