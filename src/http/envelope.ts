import type { ApiError, ErrorCode } from "./api-error.ts";

export const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

let isoMs = 0;
let isoText = "";

/** `new Date().toISOString()`, formatted once per millisecond: every answer's `meta.timestamp`. */
export function nowIso(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

export function meta() {
  return { timestamp: nowIso() };
}

export function success(data: unknown, message = "OK") {
  return { success: true as const, message, data, meta: meta() };
}

export function jsonResponse(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

/**
 * Every missing, malformed, unknown, revoked or expired key gets these exact
 * bytes (spec 5.6): the short body, without `meta`, so no two are distinguishable.
 */
const INVALID_KEY_BODY = JSON.stringify({
  success: false,
  message: "Invalid or missing API key.",
  error: { code: "INVALID_API_KEY" },
});

export function invalidApiKeyResponse(): Response {
  return new Response(INVALID_KEY_BODY, { status: 401, headers: { ...JSON_HEADERS, "www-authenticate": 'Bearer realm="api"' } });
}

export function errorBody(err: ApiError) {
  const error: { code: string; details?: unknown } = { code: err.code };
  if (err.details !== undefined) error.details = err.details;
  return { success: false as const, message: err.message, error, meta: meta() };
}

/**
 * Headers every response of a code carries, wherever it is thrown: the 5xx that
 * say "retry" tell how long to wait (a slot frees when a stream ends, a busy
 * queue drains in seconds). A header set on the error itself wins.
 */
export const DEFAULT_ERROR_HEADERS: Partial<Record<ErrorCode, Record<string, string>>> = {
  NO_SLOTS_AVAILABLE: { "retry-after": "30" },
  TRANSCODE_QUEUE_FAILED: { "retry-after": "10" },
  SERVICE_UNAVAILABLE: { "retry-after": "5" },
};

export function errorResponse(err: ApiError): Response {
  if (err.code === "INVALID_API_KEY") return invalidApiKeyResponse();
  const defaults = DEFAULT_ERROR_HEADERS[err.code];
  return jsonResponse(errorBody(err), err.status, defaults ? { ...defaults, ...err.headers } : err.headers);
}
