import { ConfigError } from "./config.ts";

/**
 * Error codes that mean the operator's environment is wrong (a path, a server
 * address, a port), not a bug: start-up reports them as one `configuration:`
 * line instead of a stack trace (issue 16). Anything else still throws.
 */
const OPERATOR_CODES = new Set([
  "ENOENT",
  "EEXIST",
  "ENOTDIR",
  "EISDIR",
  "EACCES",
  "EPERM",
  "EROFS",
  "ENOSPC",
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "SQLITE_CANTOPEN",
  "SQLITE_NOTADB",
  "SQLITE_READONLY",
  "SQLITE_PERM",
  "SQLITE_AUTH",
]);

function operatorCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && OPERATOR_CODES.has(code)) return code;
  }
  return undefined;
}

/** Runs a start-up step; an environment error becomes a ConfigError naming `what` (e.g. "DATA_DIR /srv/x"). */
export async function startupStep<T>(what: string, fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const code = operatorCode(err);
    if (!code) throw err;
    const message = err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err);
    throw new ConfigError(`${what}: ${message.includes(code) ? message : `${code}: ${message}`}`);
  }
}
