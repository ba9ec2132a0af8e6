/** Pure builders for the live stream shapes of spec 2.7 (full), 2.8 (small) and 2.9 (recording). */

export type StreamStatus = "SCHEDULED" | "READY_TO_STREAM" | "LIVE" | "ENDED" | "ERROR";
export type Latency = "NORMAL" | "LOW";

export interface RecordingInfo {
  asset_id: string;
  transcoding: boolean;
  duration_seconds: number | null;
  resolution: string | null;
  width: number | null;
  height: number | null;
}

export interface StreamContext {
  id: string;
  orgId: string;
  title: string;
  latency: Latency;
  drm: boolean;
  /** Issue 12: the recording is transcribed (`subtitles: true` at creation). Absent on older streams: false. */
  subtitles?: boolean;
  tags: Record<string, unknown> | null;
  streamKey: string;
  rtmpUrl: string;
  hlsUrl: string;
  createdAt: string;
  scheduledAt: string | null;
  startedAt: string | null;
  endedAt: string | null;
  durationSeconds: number | null;
  transcodingInSecs: number | null;
  playbackUrl: string | null;
  recording: RecordingInfo | null;
  error: { code: string; message: string } | null;
  /** Issue 27 (src/playback): absent on older streams, which are public; the recording inherits both. */
  playbackPolicy?: "public" | "signed";
  playbackRestrictionId?: string | null;
}

export function fullStream(ctx: StreamContext, status: StreamStatus) {
  return {
    id: ctx.id,
    public_id: ctx.id,
    title: ctx.title,
    status,
    rtmp_url: ctx.rtmpUrl,
    stream_key: ctx.streamKey,
    hls_url: ctx.hlsUrl,
    playback_policy: ctx.playbackPolicy ?? "public",
    playback_restriction_id: ctx.playbackRestrictionId ?? null,
    // Null on every event using this shape (spec 2.7); the GET body fills it in.
    playback_url: null as string | null,
    scheduled_at: ctx.scheduledAt,
    started_at: ctx.startedAt,
    ended_at: ctx.endedAt,
    tags: ctx.tags,
  };
}

export function smallStream(ctx: StreamContext) {
  return {
    id: ctx.id,
    title: ctx.title,
    status: "ENDED" as const,
    stream_key: ctx.streamKey,
    duration_seconds: ctx.durationSeconds,
    transcoding_in_secs: ctx.transcodingInSecs,
    latency: ctx.latency,
    drm: ctx.drm,
    playback_policy: ctx.playbackPolicy ?? "public",
    scheduled_at: ctx.scheduledAt,
    started_at: ctx.startedAt,
    ended_at: ctx.endedAt ?? new Date(0).toISOString(),
  };
}

/** Why WHEP viewers get a stream's video re-encoded (media/flv/webrtc-fit.ts decides; src/webrtc re-encodes). */
export interface WebrtcTranscode {
  reason: "B_FRAMES" | "FORMAT" | "INTERLACED";
  message: string;
}

/** What src/webrtc tells about a stream on this process: its GET shape's WebRTC fields. */
export interface StreamWebrtc {
  /** The media server can run here (`features.webrtc`): without it the WHIP/WHEP URLs are null. */
  available: boolean;
  viewers: number;
  transcode: WebrtcTranscode | null;
}

export const NO_STREAM_WEBRTC: StreamWebrtc = { available: false, viewers: 0, transcode: null };

/** A simulcast target of the stream as shown (issue 26, src/live/outputs): the key in `url` is `***`. */
export interface StreamOutput {
  id: string;
  name: string | null;
  url: string;
  status: "idle" | "connecting" | "active" | "reconnecting" | "failed" | "stopped";
  bytes_sent: number;
  started_at: string | null;
  last_error: string | null;
}

/** The GET body: the full shape plus what only exists later (recording, playback url, latency). */
/** `srtUrl`: the SRT push URL when SRT ingest listens (src/live/srt-ingest.ts), else null. `outputs`: its simulcast targets. */
export function streamResource(ctx: StreamContext, status: StreamStatus, webrtc: StreamWebrtc = NO_STREAM_WEBRTC, srtUrl: string | null = null, outputs: StreamOutput[] = []) {
  // WHIP and WHEP sit beside the live playlist, under the same token (src/webrtc); null where WebRTC cannot run.
  const liveBase = ctx.hlsUrl.replace(/\/index\.m3u8$/, "");
  return {
    ...fullStream(ctx, status),
    whip_url: webrtc.available ? `${liveBase}/whip` : null,
    whep_url: webrtc.available ? `${liveBase}/whep` : null,
    webrtc_viewers: webrtc.viewers,
    webrtc_transcode: webrtc.transcode,
    srt_url: srtUrl,
    outputs,
    playback_url: ctx.playbackUrl,
    latency: ctx.latency,
    drm: ctx.drm,
    duration_seconds: ctx.durationSeconds,
    recording: ctx.recording,
    error: ctx.error,
    created_at: ctx.createdAt,
  };
}
