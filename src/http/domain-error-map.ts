import type { DomainError, DomainErrorCode } from "../errors.ts";
import { ApiError, type ErrorCode } from "./api-error.ts";
import { errorResponse } from "./envelope.ts";

// Every domain code is a spec code (7.2): a new one must be given its status in ERROR_STATUS first.
const _everyDomainCodeHasAStatus: ErrorCode = "" as DomainErrorCode;

/**
 * The one place a domain failure becomes HTTP: the code keeps its spec status
 * (ERROR_STATUS), the message and details pass through unchanged, and the
 * envelope adds what the code always carries (Retry-After on 502/503).
 */
export function apiErrorOf(err: DomainError): ApiError {
  return new ApiError(err.code, err.message, err.details);
}

export function domainErrorResponse(err: DomainError): Response {
  return errorResponse(apiErrorOf(err));
}
