/**
 * The error codes of spec 7.2, each pinned to its HTTP status, and two of the
 * service's own in the same style (issue 23, docs/decisions.md): 405
 * METHOD_NOT_ALLOWED (a known path, another method; `Allow` lists its methods)
 * and 413 PAYLOAD_TOO_LARGE (a body over its route's limit, counted while read).
 */
export const ERROR_STATUS = {
  INVALID_API_KEY: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  API_KEY_EXISTS: 409,
  TRANSCODE_NOT_CONFIGURED: 409,
  DRM_NOT_AVAILABLE: 409,
  PAYLOAD_TOO_LARGE: 413,
  VIDEO_NOT_RETRYABLE: 409,
  VALIDATION_ERROR: 422,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  TRANSCODE_QUEUE_FAILED: 502,
  NO_SLOTS_AVAILABLE: 503,
  SERVICE_UNAVAILABLE: 503,
  BAD_REQUEST: 400,
  VIDEO_NOT_COMPLETED: 409,
  STREAM_NOT_LIVE: 409,
  CLIP_SOURCE_GONE: 409,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

const DEFAULT_MESSAGE: Record<ErrorCode, string> = {
  INVALID_API_KEY: "Invalid or missing API key.",
  PERMISSION_DENIED: "The API key's organization lacks a permission this request needs.",
  NOT_FOUND: "Resource not found.",
  METHOD_NOT_ALLOWED: "This path does not take this method: see the Allow header.",
  API_KEY_EXISTS: "The organization already has an active API key. Revoke it first.",
  TRANSCODE_NOT_CONFIGURED: "The organization has no transcoding settings.",
  DRM_NOT_AVAILABLE: "DRM is not available on the organization's plan.",
  PAYLOAD_TOO_LARGE: "The request body is larger than this route takes.",
  VIDEO_NOT_RETRYABLE: "Only a video in ERROR can be retried.",
  VALIDATION_ERROR: "The request failed validation.",
  RATE_LIMITED: "Too many requests.",
  INTERNAL_ERROR: "Internal server error.",
  TRANSCODE_QUEUE_FAILED: "The transcoding pipeline refused or timed out. Safe to retry.",
  NO_SLOTS_AVAILABLE: "Live stream capacity is exhausted. Retry shortly.",
  SERVICE_UNAVAILABLE: "A service this request needs (the database or the object store) is unavailable or did not answer in time. Nothing was changed; retry after Retry-After seconds.",
  BAD_REQUEST: "The request body is not JSON.",
  VIDEO_NOT_COMPLETED: "Only a COMPLETED video can be clipped.",
  STREAM_NOT_LIVE: "Only a LIVE stream can be clipped.",
  CLIP_SOURCE_GONE: "The media this clip is cut from is gone: it cannot be retried.",
};

/** The one error type of the HTTP layer; `errorResponse` maps it to the envelope. */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message ?? DEFAULT_MESSAGE[code]);
    this.status = ERROR_STATUS[code];
  }

  static validation(details: Record<string, string>, message?: string): ApiError {
    return new ApiError("VALIDATION_ERROR", message, details);
  }
  static notFound(): ApiError {
    return new ApiError("NOT_FOUND");
  }
}
