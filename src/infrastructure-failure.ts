/**
 * Failures of our own infrastructure (the database, the object store, this
 * machine's disk) as opposed to failures of what a customer gave us (a
 * source that answers 404, media ffmpeg cannot read). The work runner retries
 * the first kind with backoff for `INFRA_RETRY_WINDOW_SECONDS` without
 * spending an attempt (src/work/README.md): an outage of ours never turns a
 * good video into ERROR.
 */

/** Thrown (or used as a cause) where code knows a failure is ours and transient. */
export class InfrastructureError extends Error {
  override name = "InfrastructureError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * Error codes that only our own infrastructure produces on the paths the work
 * handlers take: a full or broken local disk, a database or bucket that does
 * not answer (libSQL over HTTP and Bun's fetch: `ECONNREFUSED` …; Bun's
 * S3Client: `ConnectionRefused` …). A source host's network errors never
 * reach the runner with these codes: the fetch stage rewraps them
 * (src/videos/fetch-handler.ts).
 */
const INFRA_CODES = new Set([
  "ENOSPC",
  "EDQUOT",
  "EROFS",
  "EIO",
  "EMFILE",
  "ENFILE",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ConnectionRefused",
  "ConnectionClosed",
  "ConnectionReset",
  "FailedToOpenSocket",
]);

/** A full disk as ffmpeg (or any child) reports it in its message. */
const DISK_FULL = /No space left on device|Disk quota exceeded|Read-only file system/i;

/** libSQL codes of a statement that is wrong, not of a database that is away: a bug, retried like any error. */
const SQL_BUGS = /^(SQLITE_CONSTRAINT|SQLITE_ERROR|SQLITE_MISMATCH|SQLITE_RANGE|SQL_PARSE_ERROR|SQL_INPUT_ERROR|SQLITE_TOOBIG|ARGS_INVALID|TRANSACTION_CLOSED)/;

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** Is this failure (or one of its causes) our infrastructure's, so worth retrying without blaming the media? */
export function isInfrastructureFailure(err: unknown): boolean {
  for (let e = err as ErrorShape | undefined, depth = 0; e && typeof e === "object" && depth < 5; e = e.cause as ErrorShape | undefined, depth++) {
    if (e instanceof InfrastructureError) return true;
    const code = typeof e.code === "string" ? e.code : "";
    const name = typeof e.name === "string" ? e.name : "";
    if (INFRA_CODES.has(code)) return true;
    // Bun's S3Client: any answer of the bucket but a missing key (handled by the store) is the bucket's trouble.
    if (name === "S3Error" && code !== "NoSuchKey") return true;
    // @libsql/client: a server that went away (HRANA_WEBSOCKET_ERROR, SERVER_ERROR …) or a file that is busy, full, or broken.
    if (name === "LibsqlError" && !SQL_BUGS.test(code)) return true;
    if (typeof e.message === "string" && DISK_FULL.test(e.message)) return true;
  }
  return false;
}
