import { type Static, t } from "elysia";
import { OutputSchema } from "./outputs/output-schemas.ts";
import type { fullStream, RecordingInfo, smallStream, streamResource } from "../../machines/livestream-payload.ts";
import { type Equals, named, recordOf, integer, isoTime, nullable, pageOf, strictObject } from "../http/openapi-docs.ts";

/**
 * The response schemas of the live stream API and the `data` of the
 * LIVESTREAM_* events, pinned by `Equals` to the builders of
 * machines/livestream-payload.ts (a field added on one side fails tsc).
 */

const PlaybackPolicySchema = t.Union([t.Literal("public"), t.Literal("signed")], {
  description: "`signed`: `hls_url` and the recording's media need `?token=<JWT>` (see Signed playback); the recording inherits it.",
});

const StreamStatusSchema = t.Union([t.Literal("SCHEDULED"), t.Literal("READY_TO_STREAM"), t.Literal("LIVE"), t.Literal("ENDED"), t.Literal("ERROR")]);
const LatencySchema = t.Union([t.Literal("NORMAL"), t.Literal("LOW")]);
const time = (description: string) => nullable(isoTime(), { description });

/** Spec 2.9: the recording of a broadcast, a video in the library. */
export const RecordingSchema = strictObject({
  asset_id: t.String({ description: "The recording's video id." }),
  transcoding: t.Boolean(),
  duration_seconds: nullable(t.Number()),
  resolution: nullable(t.String({ examples: ["1280x720"] })),
  width: nullable(integer()),
  height: nullable(integer()),
});

const fullFields = {
  id: t.String({ description: "The stream's id (`ls_…`)." }),
  public_id: t.String(),
  title: t.String(),
  status: StreamStatusSchema,
  rtmp_url: t.String({ description: "Push here (ffmpeg: as is; OBS: as Server with a blank key)." }),
  stream_key: t.String(),
  hls_url: t.String({
    description:
      "The live HLS playlist: CMAF segments for every player and, in the same playlist, low-latency HLS parts (EXT-X-PART, at most 0.5 s) with blocking reload (`_HLS_msn`, `_HLS_part`) for players that support it (hls.js `lowLatencyMode`, Safari).",
  }),
  playback_policy: PlaybackPolicySchema,
  playback_restriction_id: nullable(t.String(), { description: "The playback restriction whose referrer rules apply (also to the recording)." }),
  playback_url: nullable(t.String(), { description: "The recording's HLS master once playable; always null in events." }),
  scheduled_at: time("When a booked stream starts."),
  started_at: time("When media first arrived."),
  ended_at: time("When the broadcast ended."),
  tags: nullable(recordOf(t.Unknown())),
};

/** Spec 2.7: the full shape (LIVESTREAM_SCHEDULED, STARTED, an explicit ENDED). */
export const FullStreamSchema = strictObject(fullFields);

/** Spec 2.8: the small shape of a pipeline's end (ENDED, RECORDING_READY). */
export const SmallStreamSchema = strictObject({
  id: t.String(),
  title: t.String(),
  status: t.Literal("ENDED"),
  stream_key: t.String(),
  duration_seconds: nullable(t.Number()),
  transcoding_in_secs: nullable(t.Number()),
  latency: LatencySchema,
  drm: t.Boolean(),
  playback_policy: PlaybackPolicySchema,
  scheduled_at: nullable(isoTime()),
  started_at: nullable(isoTime()),
  ended_at: isoTime(),
});

/** The GET shape: the full shape plus what exists only later. */
export const StreamResourceSchema = strictObject({
  ...fullFields,
  whip_url: nullable(t.String(), {
    description:
      "WHIP ingest (RFC 9725): POST an SDP offer with `Authorization: Bearer <stream_key>` (OBS 30+: WHIP output, Server = this URL, Bearer Token = the stream key). Null when this server has no WebRTC (`features.webrtc` false in GET /organization/).",
  }),
  whep_url: nullable(t.String(), {
    description: "WHEP playback: POST an SDP offer (sub-second, while the stream is LIVE, whether published by WHIP or RTMP). Null when this server has no WebRTC (`features.webrtc` false).",
  }),
  srt_url: nullable(t.String(), {
    description:
      'SRT push (MPEG-TS with H.264 and AAC): `srt://host:SRT_PORT?streamid=publish:<stream_key>`, for ffmpeg (`-f mpegts "<srt_url>"`) and OBS (Server = this URL, Stream Key blank). Null when the server has no SRT ingest (`GET /organization/` `features.srt`).',
  }),
  outputs: t.Array(OutputSchema, { description: "Simulcast targets (issue 26): `POST /livestreams/{id}/outputs/`; sent while the stream is LIVE." }),
  webrtc_viewers: integer({ description: "WHEP viewers now (on the process holding the broadcast)." }),
  webrtc_transcode: nullable(
    strictObject({
      reason: t.Union([t.Literal("B_FRAMES"), t.Literal("FORMAT"), t.Literal("INTERLACED")], {
        description: "B_FRAMES: the encoder sends B-frames; FORMAT: not 8-bit 4:2:0 (10-bit, 4:2:2, 4:4:4); INTERLACED: interlaced H.264.",
      }),
      message: t.String({ description: "What was seen in the stream." }),
    }),
    {
      description:
        "Set while the stream is published here with H.264 that WebRTC players cannot take as sent: WHEP viewers then get it re-encoded to constrained baseline without B-frames, at the source's size and frame rate (CPU on the server, slightly more delay). Null when they get the encoder's H.264 as is, or nothing is published here. To avoid the re-encode, send no B-frames (x264 `-bf 0` or `-tune zerolatency`; OBS: `bframes=0` in the x264 options, or the baseline profile).",
    },
  ),
  latency: LatencySchema,
  drm: t.Boolean(),
  duration_seconds: nullable(t.Number()),
  recording: nullable(RecordingSchema),
  error: nullable(strictObject({ code: t.String(), message: t.String() })),
  created_at: isoTime(),
});

export const StreamAnswerSchema = strictObject({ stream: StreamResourceSchema });
export const StreamListSchema = pageOf(StreamResourceSchema);

/** `data` of LIVESTREAM_SCHEDULED, LIVESTREAM_STARTED and an explicit LIVESTREAM_ENDED. */
export const FullStreamEventDataSchema = strictObject({ stream: FullStreamSchema });
/** `data` of LIVESTREAM_RECORDING_READY and a pipeline's LIVESTREAM_ENDED. */
export const SmallStreamEventDataSchema = strictObject({ stream: SmallStreamSchema, recording: nullable(RecordingSchema) });

// Drift guards (see Equals).
const _recording: Equals<Static<typeof RecordingSchema>, RecordingInfo> = true;
const _full: Equals<Static<typeof FullStreamSchema>, ReturnType<typeof fullStream>> = true;
const _small: Equals<Static<typeof SmallStreamSchema>, ReturnType<typeof smallStream>> = true;
const _resource: Equals<Static<typeof StreamResourceSchema>, ReturnType<typeof streamResource>> = true;
void [_recording, _full, _small, _resource];

// Named in the document (components.schemas), so clients get these types by name.
named("Stream", StreamResourceSchema);
named("StreamEventShape", FullStreamSchema);
named("StreamEndedShape", SmallStreamSchema);
named("Recording", RecordingSchema);
