import { EVENT_TYPES, type EventType, type ViewEvent } from "./event-types.ts";

/** A body over this is 413 (issue 28: at most 64 KB). */
export const BEACON_MAX_BYTES = 64 * 1024;
/** Events one body may carry. */
export const BEACON_MAX_EVENTS = 500;
const ID = /^[A-Za-z0-9_-]{1,64}$/;
const TYPES = new Set<string>(EVENT_TYPES);
const KNOWN = new Set(["view_id", "viewer_id", "video_id", "stream_id", "type", "t", "player_time", "height", "bitrate", "code", "startup_ms", "token"]);
/** A playback JWT is well under this. */
const TOKEN_MAX = 4096;

/** One checked event of a beacon. */
export interface BeaconEvent extends ViewEvent {
  viewId: string;
  viewerId: string;
  assetId: string;
  assetKind: "video" | "livestream";
  token: string | null;
}

export type BeaconParse = { ok: true; events: BeaconEvent[] } | { ok: false; status: 400 | 422; details: Record<string, string> };

const isInt = (v: unknown, max: number): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= max;

/**
 * Parses a beacon body (UTF-8 JSON, any content type: `sendBeacon` sends
 * `text/plain` to avoid a preflight). Not JSON → 400; JSON of the wrong shape
 * → 422 with `details` naming each bad field as `[index].field`.
 */
export function parseBeacon(text: string): BeaconParse {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, status: 400, details: { body: "is not valid JSON" } };
  }
  if (!Array.isArray(body)) return { ok: false, status: 422, details: { body: "must be an array of events" } };
  if (body.length === 0) return { ok: false, status: 422, details: { body: "must hold at least one event" } };
  if (body.length > BEACON_MAX_EVENTS) return { ok: false, status: 422, details: { body: `must hold at most ${BEACON_MAX_EVENTS} events` } };
  const details: Record<string, string> = {};
  let problems = 0;
  const events: BeaconEvent[] = [];
  // A player's body repeats its ids in every event: each distinct one is checked once.
  const ids = new Set<unknown>();
  const isId = (v: unknown) => ids.has(v) || (typeof v === "string" && ID.test(v) && ids.add(v) !== undefined);
  for (let i = 0; i < body.length; i++) {
    const e = body[i] as Record<string, unknown>;
    const at = (f: string, msg: string) => {
      if (problems++ < 20) details[`[${i}].${f}`] = msg;
    };
    if (typeof e !== "object" || e === null || Array.isArray(e)) {
      at("", "must be an object");
      continue;
    }
    for (const k in e) if (!KNOWN.has(k)) at(k.slice(0, 64), "is not a known field");
    if (!isId(e.view_id)) at("view_id", "must be 1-64 letters, digits, - or _");
    if (!isId(e.viewer_id)) at("viewer_id", "must be 1-64 letters, digits, - or _");
    const hasVideo = e.video_id !== undefined;
    const hasStream = e.stream_id !== undefined;
    if (hasVideo === hasStream) at("video_id", "exactly one of video_id and stream_id is required");
    const assetId = hasVideo ? e.video_id : e.stream_id;
    if ((hasVideo || hasStream) && !isId(assetId)) at(hasVideo ? "video_id" : "stream_id", "must be an id");
    if (typeof e.type !== "string" || !TYPES.has(e.type)) at("type", `must be one of ${EVENT_TYPES.join(", ")}`);
    if (!isInt(e.t, 8_640_000_000_000)) at("t", "must be the player's clock in epoch milliseconds (an integer)");
    if (typeof e.player_time !== "number" || !Number.isFinite(e.player_time) || e.player_time < 0) at("player_time", "must be the media position in seconds (a number >= 0)");
    if (e.type === "rendition_change") {
      if (!isInt(e.height, 10_000)) at("height", "is required for rendition_change: an integer 0-10000");
      if (!isInt(e.bitrate, 1_000_000_000)) at("bitrate", "is required for rendition_change: bits per second, an integer");
    } else {
      if (e.height !== undefined) at("height", "is only for rendition_change");
      if (e.bitrate !== undefined) at("bitrate", "is only for rendition_change");
    }
    if (e.type === "error") {
      if (!((typeof e.code === "string" && e.code.length >= 1 && e.code.length <= 64) || isInt(e.code, 1_000_000_000))) at("code", "is required for error: a string of 1-64 characters or an integer");
    } else if (e.code !== undefined) at("code", "is only for error");
    if (e.startup_ms !== undefined && (e.type !== "playing" || !isInt(e.startup_ms, 600_000))) at("startup_ms", "is only for playing: milliseconds 0-600000");
    if (e.token !== undefined && (typeof e.token !== "string" || e.token.length > TOKEN_MAX)) at("token", `must be a playback token (at most ${TOKEN_MAX} characters)`);
    if (problems > 0) continue;
    events.push({
      viewId: e.view_id as string,
      viewerId: e.viewer_id as string,
      assetId: assetId as string,
      assetKind: hasVideo ? "video" : "livestream",
      type: e.type as EventType,
      t: e.t as number,
      playerTime: e.player_time as number,
      height: (e.height as number | undefined) ?? null,
      bitrate: (e.bitrate as number | undefined) ?? null,
      code: e.code === undefined ? null : String(e.code),
      startupMs: (e.startup_ms as number | undefined) ?? null,
      token: (e.token as string | undefined) ?? null,
    });
  }
  if (problems > 0) return { ok: false, status: 422, details };
  return { ok: true, events };
}
