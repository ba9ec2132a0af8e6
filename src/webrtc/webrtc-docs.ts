import { t } from "elysia";
import { errorEnvelope, operationId } from "../http/openapi-docs.ts";
import { WEBRTC_ERROR_STATUS, type WebrtcErrorCode } from "./webrtc-answers.ts";

/**
 * OpenAPI `detail` of the WHIP and WHEP routes (webrtc-routes.ts). Not the
 * API's `doc()`: no API key (a WHIP publisher sends the stream key as a
 * bearer token, a WHEP viewer needs only the URL's playback token), SDP in
 * and out, and codes of their own (webrtc-answers.ts), each under its status.
 */
function webrtcDoc(opts: { operationId: string; summary: string; description: string; ok: Record<string, unknown>; codes: WebrtcErrorCode[]; sdp: boolean }) {
  const byStatus = new Map<number, WebrtcErrorCode[]>();
  for (const code of opts.codes) byStatus.set(WEBRTC_ERROR_STATUS[code], [...(byStatus.get(WEBRTC_ERROR_STATUS[code]) ?? []), code]);
  const responses: Record<string, unknown> = { ...opts.ok };
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const retry = codes.some((c) => ["RATE_LIMITED", "NO_SLOTS_AVAILABLE", "VIEWER_LIMIT_REACHED", "WEBRTC_UNAVAILABLE"].includes(c));
    responses[String(status)] = {
      description: codes.join(", "),
      content: { "application/json": { schema: errorEnvelope(codes) } },
      ...(retry ? { headers: { "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer" } } } } : {}),
    };
  }
  return {
    operationId: operationId(opts.operationId),
    tags: ["WebRTC"],
    summary: opts.summary,
    description: opts.description,
    security: [],
    ...(opts.sdp ? { requestBody: { required: true, description: "The SDP offer.", content: { "application/sdp": { schema: { type: "string" } } } } } : {}),
    responses,
  } as never;
}

const CREATED = {
  "201": {
    description: "The SDP answer (every ICE candidate in it: no trickle ICE).",
    headers: {
      Location: { description: "The session's URL: DELETE it to stop.", schema: { type: "string" } },
      ETag: { description: "The session's entity tag.", schema: { type: "string" } },
    },
    content: { "application/sdp": { schema: { type: "string" } } },
  },
};
const ENDED = { "200": { description: "The session is closed (no body)." } };
const OFFER_CODES: WebrtcErrorCode[] = ["NOT_FOUND", "UNSUPPORTED_MEDIA_TYPE", "VALIDATION_ERROR", "WEBRTC_UNAVAILABLE"];

export const WHIP_DOC = webrtcDoc({
  operationId: "createWhipSession",
  summary: "Publish over WebRTC (WHIP)",
  description:
    "WHIP ingest (RFC 9725) at a stream's `whip_url`: POST an SDP offer (`Content-Type: application/sdp`, H.264 and Opus) with `Authorization: Bearer <stream_key>`; the answer is 201 with the SDP answer and `Location`, the session to DELETE when done. The broadcast then goes on as an RTMP one does (LIVESTREAM_STARTED, `hls_url`, WHEP viewers, the recording). OBS 30+: Settings → Stream → Service WHIP, Server = `whip_url`, Bearer Token = `stream_key`. Refusals are the API envelope: 401 INVALID_STREAM_KEY (with `WWW-Authenticate`), 409 STREAM_NOT_ACCEPTING (booked, ended, or another encoder is publishing), 429 RATE_LIMITED (ingest connections per address, RTMP and WHIP together), 503 NO_SLOTS_AVAILABLE or WEBRTC_UNAVAILABLE (with `Retry-After`). Needs `npm run setup:webrtc` on the server (`GET /organization/` `features.webrtc`).",
  ok: CREATED,
  codes: [...OFFER_CODES, "INVALID_STREAM_KEY", "STREAM_NOT_ACCEPTING", "RATE_LIMITED", "NO_SLOTS_AVAILABLE"],
  sdp: true,
});

export const WHIP_END_DOC = webrtcDoc({
  operationId: "deleteWhipSession",
  summary: "Stop publishing over WebRTC (WHIP)",
  description: "DELETE the `Location` of a WHIP session: the publisher leaves, as an RTMP encoder that disconnects (the stream ends after its reconnect window). An unknown session is 404.",
  ok: ENDED,
  codes: ["NOT_FOUND"],
  sdp: false,
});

export const WHEP_DOC = webrtcDoc({
  operationId: "createWhepSession",
  summary: "Play over WebRTC (WHEP)",
  description:
    "WHEP playback at a stream's `whep_url` (sub-second latency), whether the stream is published by WHIP or RTMP: POST an SDP offer (`Content-Type: application/sdp`, recvonly audio and video), no key (the URL's token is the credential, as for `hls_url`). A stream with `playback_policy: signed` needs `?token=<JWT>` on this URL (RS256, header `kid` = a signing key's id, `sub` = the stream's id, `aud` = `v`, `exp`), as its `hls_url` does; its playback restriction (and the token's `playback_restriction_id`) judges the Referer: otherwise 403 PERMISSION_DENIED, `details` naming what failed (`token`, `referrer`, `playback_restriction_id`). 201 with the SDP answer and `Location`, the session to DELETE when done. 409 STREAM_NOT_LIVE while nothing is published (`hls_url` answers 404 then too); 503 VIEWER_LIMIT_REACHED past `WEBRTC_MAX_VIEWERS_PER_STREAM` (`hls_url` has no limit) or WEBRTC_UNAVAILABLE, with `Retry-After`.",
  ok: CREATED,
  codes: [...OFFER_CODES, "PERMISSION_DENIED", "STREAM_NOT_LIVE", "VIEWER_LIMIT_REACHED"],
  sdp: true,
});

/** WHEP's query, for the document (the playback gate reads it from the URL). */
export const WHEP_QUERY = t.Object({
  token: t.Optional(
    t.String({ description: "A stream with `playback_policy: signed`: the playback JWT (RS256, `aud: v`, `sub` = the stream's id) signed with one of the organization's signing keys." }),
  ),
});

export const WHEP_END_DOC = webrtcDoc({
  operationId: "deleteWhepSession",
  summary: "Stop playing over WebRTC (WHEP)",
  description: "DELETE the `Location` of a WHEP session: frees the viewer's place. An unknown session is 404.",
  ok: ENDED,
  codes: ["NOT_FOUND"],
  sdp: false,
});
