import { jsonResponse, meta } from "../http/envelope.ts";

/**
 * WHIP and WHEP are not API routes (no API key: a bearer stream key, or the
 * stream's playback token in the path), but their errors are the API's
 * envelope. Browsers call them from other origins: every answer allows it
 * and exposes the headers the protocols need.
 */
export const CORS_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "POST, DELETE, PATCH, OPTIONS",
  "access-control-allow-headers": "authorization, content-type, if-match",
  "access-control-expose-headers": "location, link, etag, accept-patch, retry-after",
};

export type WebrtcErrorCode =
  | "INVALID_STREAM_KEY"
  | "NOT_FOUND"
  | "NO_SLOTS_AVAILABLE"
  | "RATE_LIMITED"
  | "STREAM_NOT_ACCEPTING"
  | "STREAM_NOT_LIVE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "VALIDATION_ERROR"
  | "VIEWER_LIMIT_REACHED"
  | "WEBRTC_UNAVAILABLE"
  | "METHOD_NOT_ALLOWED"
  | "PAYLOAD_TOO_LARGE"
  | "PERMISSION_DENIED";

/** The status of each code (documented per operation in webrtc-docs.ts). */
export const WEBRTC_ERROR_STATUS: Record<WebrtcErrorCode, number> = {
  INVALID_STREAM_KEY: 401,
  NOT_FOUND: 404,
  NO_SLOTS_AVAILABLE: 503,
  RATE_LIMITED: 429,
  STREAM_NOT_ACCEPTING: 409,
  STREAM_NOT_LIVE: 409,
  UNSUPPORTED_MEDIA_TYPE: 415,
  VALIDATION_ERROR: 422,
  VIEWER_LIMIT_REACHED: 503,
  WEBRTC_UNAVAILABLE: 503,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  // Issue 27: a signed stream's WHEP without a valid `?token=`, or a referrer its restriction refuses (src/playback).
  PERMISSION_DENIED: 403,
};

export function webrtcError(code: WebrtcErrorCode, message: string, headers: Record<string, string> = {}): Response {
  const extra: Record<string, string> = { ...CORS_HEADERS, ...headers };
  if (code === "INVALID_STREAM_KEY") extra["www-authenticate"] = 'Bearer realm="whip"';
  // The spec's 429 RATE_LIMITED and 503 NO_SLOTS_AVAILABLE carry Retry-After, as this server's other 503s do.
  if (code === "VIEWER_LIMIT_REACHED" || code === "WEBRTC_UNAVAILABLE" || code === "RATE_LIMITED" || code === "NO_SLOTS_AVAILABLE") extra["retry-after"] ??= "30";
  return jsonResponse({ success: false, message, error: { code }, meta: meta() }, WEBRTC_ERROR_STATUS[code], extra);
}

/** 201 with the SDP answer and the session's URL. */
export function sdpAnswer(answer: string, location: string): Response {
  return new Response(answer, { status: 201, headers: { ...CORS_HEADERS, "content-type": "application/sdp", location, etag: `"${location.split("/").pop()}"` } });
}

export function preflight(): Response {
  return new Response(null, { status: 204, headers: { ...CORS_HEADERS, "accept-post": "application/sdp", "access-control-max-age": "600" } });
}
