import type { DomainError, DomainErrorCode } from "../errors.ts";
import { ApiError, type ErrorCode } from "./api-error.ts";
import { DEFAULT_ERROR_HEADERS, errorResponse } from "./envelope.ts";

// Every domain code is a spec code (7.2): a new one must be given its status in ERROR_STATUS first.
const _everyDomainCodeHasAStatus: ErrorCode = "" as DomainErrorCode;

/**
 * The one place a domain failure becomes HTTP: the code keeps its spec status
 * (ERROR_STATUS), the message and details pass through unchanged, and the
 * envelope adds what the code always carries (Retry-After on 502/503).
 */
export function apiErrorOf(err: DomainError): ApiError {
  // A dependency's failure names hosts and codes: those are for the logs; the client gets the code's own words.
  if (err.code === "SERVICE_UNAVAILABLE") return serviceUnavailable();
  return new ApiError(err.code, err.message, err.details);
}

/** 503 SERVICE_UNAVAILABLE: Retry-After as a header (the envelope's default) and in `error.details`, in seconds. */
export function serviceUnavailable(): ApiError {
  const seconds = Number(DEFAULT_ERROR_HEADERS.SERVICE_UNAVAILABLE!["retry-after"]);
  return new ApiError("SERVICE_UNAVAILABLE", undefined, { retry_after: seconds });
}

export function domainErrorResponse(err: DomainError): Response {
  return errorResponse(apiErrorOf(err));
}
