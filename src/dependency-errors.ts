import { DomainError } from "./errors.ts";

export type Dependency = "database" | "storage";

/**
 * A dependency of ours (the database, the object store) is down or did not
 * answer within its bound. Not the caller's fault and not a bug: the answer
 * is 503 SERVICE_UNAVAILABLE with Retry-After (src/http/domain-error-map.ts),
 * and work that hits it is worth retrying. `details` stays generic: which
 * host or path failed is for the logs, not the client.
 */
export class DependencyUnavailable extends DomainError {
  readonly code = "SERVICE_UNAVAILABLE";
  constructor(
    readonly dependency: Dependency,
    what: string,
    options?: { cause?: unknown },
  ) {
    super(`${dependency} unavailable: ${what}`);
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

/** Network failures of a socket to a dependency (Bun's and Node's codes). */
const NETWORK_CODES = new Set([
  "ConnectionRefused",
  "ConnectionClosed",
  "ConnectionReset",
  "FailedToOpenSocket",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
]);

/**
 * libSQL codes that say the server or its lock is not there right now, as
 * opposed to a statement that is wrong (constraint, parse error): those stay
 * bugs (500).
 */
function isDatabaseOutage(code: string): boolean {
  return (
    code.startsWith("SQLITE_BUSY") ||
    code.startsWith("SQLITE_IOERR") ||
    code === "SQLITE_LOCKED" ||
    code === "SQLITE_FULL" ||
    code === "SQLITE_CANTOPEN" ||
    code.startsWith("HRANA_") ||
    code === "SERVER_ERROR" ||
    code === "STREAM_EXPIRED" ||
    code === "TRANSACTION_TIMEOUT" ||
    code === "HTTP_ERROR" ||
    code === "WEBSOCKET_ERROR" ||
    NETWORK_CODES.has(code)
  );
}

/**
 * The dependency failure behind `err`, or null when it is something else (a
 * bug, bad input). Walks the `cause` chain: drizzle wraps libSQL's errors
 * ("Failed query: …" with the LibsqlError as cause), libSQL wraps fetch's.
 */
export function dependencyFailure(err: unknown): DependencyUnavailable | null {
  let dependency: Dependency | null = null;
  for (let e = err as { name?: unknown; code?: unknown; cause?: unknown; message?: unknown } | undefined, depth = 0; e && typeof e === "object" && depth < 8; e = e.cause as typeof e, depth++) {
    if (e instanceof DependencyUnavailable) return e;
    const code = typeof e.code === "string" ? e.code : "";
    const name = typeof e.name === "string" ? e.name : "";
    if (name === "LibsqlError" || name === "DrizzleQueryError" || (typeof e.message === "string" && e.message.startsWith("Failed query:"))) dependency = "database";
    if (name === "S3Error" || code.startsWith("ERR_S3")) dependency ??= "storage";
    if (isDatabaseOutage(code) && !code.startsWith("ERR_S3")) return new DependencyUnavailable(dependency ?? "database", code, { cause: err });
    if (name === "TimeoutError" || NETWORK_CODES.has(code)) return new DependencyUnavailable(dependency ?? "database", name === "TimeoutError" ? "timed out" : code, { cause: err });
    if (dependency === "storage" && (code === "InternalError" || code === "ServiceUnavailable" || code === "SlowDown" || /^5\d\d$/.test(code)))
      return new DependencyUnavailable("storage", code, { cause: err });
  }
  return null;
}

/**
 * `promise`, or a DependencyUnavailable once `ms` passed. The promise runs
 * on (a request that is already sent cannot be taken back); its late result
 * is dropped, its late failure swallowed.
 */
export function boundedBy<T>(promise: Promise<T>, ms: number, dependency: Dependency, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DependencyUnavailable(dependency, `${what} did not answer within ${ms} ms`)), ms);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
