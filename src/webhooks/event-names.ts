/** The event names of the reference (spec section 6): the only ones an endpoint may subscribe to. */
export const EVENT_NAMES = [
  "VIDEO_UPLOADED",
  "VIDEO_TRANSCODING_STARTED",
  "VIDEO_TRANSCODING_COMPLETED",
  "VIDEO_TRANSCODING_FAILED",
  "LIVESTREAM_SCHEDULED",
  "LIVESTREAM_STARTED",
  "LIVESTREAM_ENDED",
  "LIVESTREAM_RECORDING_READY",
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

const KNOWN = new Set<string>(EVENT_NAMES);

export function isEventName(name: unknown): name is EventName {
  return typeof name === "string" && KNOWN.has(name);
}
