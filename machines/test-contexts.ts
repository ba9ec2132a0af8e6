import type { StreamContext } from "./livestream-payload.ts";
import type { VideoContext } from "./video-payload.ts";

/** Minimal valid machine inputs for unit tests. */
export function videoInput(over: Partial<VideoContext> = {}): VideoContext {
  return {
    id: "vid_test",
    orgId: "org_test",
    title: "Test",
    kind: "UPLOAD",
    sourceUrl: "https://example.com/a.mp4",
    drm: false,
    subtitles: false,
    tags: null,
    createdAt: "2026-01-01T00:00:00.000Z",
    progress: 0,
    transcoderId: null,
    outcome: null,
    error: null,
    stream: null,
    ...over,
  };
}

export function streamInput(over: Partial<StreamContext> = {}): StreamContext {
  return {
    id: "ls_test",
    orgId: "org_test",
    title: "Live",
    latency: "NORMAL",
    drm: false,
    tags: null,
    streamKey: "key",
    rtmpUrl: "rtmp://localhost:1935/live/key?sig=x",
    hlsUrl: "http://localhost:8080/live/ls_test/index.m3u8",
    createdAt: "2026-01-01T00:00:00.000Z",
    scheduledAt: null,
    startedAt: null,
    endedAt: null,
    durationSeconds: null,
    transcodingInSecs: null,
    playbackUrl: null,
    recording: null,
    error: null,
    ...over,
  };
}

/** The spec's full stream shape (2.7) in events, sorted: the contract every live suite checks. */
export const FULL_STREAM_KEYS = [
  "ended_at",
  "hls_url",
  "id",
  "playback_policy",
  "playback_restriction_id",
  "playback_url",
  "public_id",
  "rtmp_url",
  "scheduled_at",
  "started_at",
  "status",
  "stream_key",
  "tags",
  "title",
];
/** The small stream shape of the recording events, sorted. */
export const SMALL_STREAM_KEYS = ["drm", "duration_seconds", "ended_at", "id", "latency", "playback_policy", "scheduled_at", "started_at", "status", "stream_key", "title", "transcoding_in_secs"];
