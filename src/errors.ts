/**
 * Failures of the domain (videos, live streams, webhooks, organizations),
 * thrown by services and stores that know nothing of HTTP. The `code` is the
 * spec's error vocabulary (7.2): it is the product's language, also stored on a
 * failed stream and printed by the CLI. What a code becomes on the wire
 * (status, envelope, Retry-After) is decided once, in src/http/domain-error-map.ts.
 */
export type DomainErrorCode =
  | "NOT_FOUND"
  | "PERMISSION_DENIED"
  | "API_KEY_EXISTS"
  | "TRANSCODE_NOT_CONFIGURED"
  | "DRM_NOT_AVAILABLE"
  | "VIDEO_NOT_RETRYABLE"
  | "VALIDATION_ERROR"
  | "TRANSCODE_QUEUE_FAILED"
  | "NO_SLOTS_AVAILABLE"
  | "SERVICE_UNAVAILABLE"
  | "VIDEO_NOT_COMPLETED"
  | "STREAM_NOT_LIVE"
  | "CLIP_SOURCE_GONE";

export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;
  /** What the client may act on (the failing fields, the missing permission); shown as `error.details`. */
  readonly details?: unknown;
  constructor(message: string, details?: unknown) {
    super(message);
    this.name = new.target.name;
    if (details !== undefined) this.details = details;
  }
}

/** One or more input fields are wrong: `details` names each with what is expected. */
export class InvalidInput extends DomainError {
  readonly code = "VALIDATION_ERROR";
  declare readonly details: Record<string, string>;
  constructor(fields: Record<string, string>, message = "The request failed validation.") {
    super(message, { ...fields });
  }
  get fields(): Record<string, string> {
    return this.details;
  }
}

/** The thing does not exist, or belongs to another organization (the two are not told apart). */
export class NotFound extends DomainError {
  readonly code = "NOT_FOUND";
  constructor(message = "Resource not found.") {
    super(message);
  }
}
