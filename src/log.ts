/**
 * Structured logs: one JSON object per line on stdout, tagged with whatever ids
 * the caller binds (org_id, video_id, stream_id, ...). `child` binds tags once
 * so every line of a job or request carries them.
 *
 * Every line goes through `redact` before it is written: secrets never reach a
 * log at any level, whatever a call site passes (see `redact`).
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogTags = Record<string, unknown>;

export interface Logger {
  debug(msg: string, tags?: LogTags): void;
  info(msg: string, tags?: LogTags): void;
  warn(msg: string, tags?: LogTags): void;
  error(msg: string, tags?: LogTags): void;
  child(tags: LogTags): Logger;
  /** Whether a line at `level` would be written: a hot path (the access log) skips building a line nobody reads. */
  enabled(level: LogLevel): boolean;
}

const ORDER: Record<LogLevel | "silent", number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export const REDACTED = "[redacted]";

/**
 * Field names whose values are secrets, compared lower-cased without `_` and
 * `-`: stream keys, presigned and push URLs, passwords, secrets, tokens,
 * credentials.
 */
const SECRET_FIELD =
  /^(streamkey|streamkeys|uploadurl|rtmpurl|password|downloadpassword|passphrase|secret|signingsecret|secretkey|secrethash|token|accesstoken|authtoken|databaseauthtoken|authorization|cookie|setcookie|apikey|xapikey|key|sig|signature)$/;

/**
 * Secrets recognised inside any string (messages, URLs, error texts):
 * - API keys `sk_live_<prefix>_<secret>`: the secret part (the prefix is not a secret);
 * - webhook signing secrets `whsec_…`;
 * - signed URLs: the value of `sig`, `signature`, `token`, `key`, `X-Amz-Signature`, … query parameters;
 * - the path segment right before a `?sig=` query (`/live/<stream key>?sig=`, the RTMP `app`/`name` forms `live/<key>?sig=`);
 * - the stream key segment of any `rtmp://host/app/<key>` URL.
 */
const apiKeyRedacted = (key: string) => {
  const prefix = /^sk_live_([0-9A-Za-z]{12})_/.exec(key);
  return prefix ? `sk_live_${prefix[1]}_${REDACTED}` : `sk_live_${REDACTED}`;
};
const STRING_RULES: Array<[RegExp, string | ((match: string) => string)]> = [
  [/\bsk_live_[0-9A-Za-z_]+/g, apiKeyRedacted],
  [/\bwhsec_[0-9A-Za-z_-]+/g, `whsec_${REDACTED}`],
  [/(rtmps?:\/\/[^/\s"'?#]+\/[^/\s"'?#]+\/)[^\s"'#]+/gi, `$1${REDACTED}`],
  [/[^/\s"'?#=&]+(\?sig=)/gi, `${REDACTED}$1`],
  [/([?&](?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|token|access_token|key|api_key|password)=)[^&\s"'#]*/gi, `$1${REDACTED}`],
];
const MAY_HOLD_SECRET = /sk_live_|whsec_|rtmps?:\/\/|sig=|signature=|x-amz-|token=|key=|password=/i;

function redactString(s: string): string {
  if (!MAY_HOLD_SECRET.test(s)) return s;
  for (const [pattern, replacement] of STRING_RULES) s = s.replace(pattern, replacement as string);
  return s;
}

function isSecretField(name: string): boolean {
  return SECRET_FIELD.test(name.toLowerCase().replace(/[-_]/g, ""));
}

/**
 * A copy of `value` with secrets replaced by "[redacted]": values of secret
 * field names (at any depth) and secrets recognised inside strings. Errors
 * become `{name, message, stack}` (redacted too). Depth-limited, cycle-safe.
 */
export function redact(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  if (typeof value === "string") return redactString(value);
  if (value === null || typeof value !== "object") return value;
  if (seen.has(value) || depth > 8) return "[…]";
  seen.add(value);
  if (value instanceof Error) {
    const out: Record<string, unknown> = { name: value.name, message: redactString(value.message) };
    if (value.stack) out.stack = redactString(value.stack);
    const code = (value as { code?: unknown }).code;
    if (code !== undefined) out.code = redact(code, depth + 1, seen);
    if (value.cause !== undefined) out.cause = redact(value.cause, depth + 1, seen);
    return out;
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1, seen));
  if (value instanceof URL) return redactString(value.href);
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return `[${(value as ArrayBuffer).byteLength} bytes]`;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = isSecretField(k) && v !== null && v !== undefined && v !== "" ? REDACTED : redact(v, depth + 1, seen);
  }
  return out;
}

export function createLogger(opts: { level?: LogLevel | "silent"; tags?: LogTags; write?: (line: string) => void } = {}): Logger {
  const min = ORDER[opts.level ?? "info"];
  const base = opts.tags ?? {};
  const write = opts.write ?? ((line: string) => process.stdout.write(line + "\n"));
  const emit = (level: LogLevel, msg: string, tags?: LogTags) => {
    if (ORDER[level] < min) return;
    const entry = redact({ ...base, ...tags }) as Record<string, unknown>;
    write(JSON.stringify({ time: new Date().toISOString(), level, msg: redactString(msg), ...entry }));
  };
  return {
    debug: (m, t) => emit("debug", m, t),
    info: (m, t) => emit("info", m, t),
    warn: (m, t) => emit("warn", m, t),
    error: (m, t) => emit("error", m, t),
    child: (tags) => createLogger({ level: opts.level, tags: { ...base, ...tags }, write }),
    enabled: (level) => ORDER[level] >= min,
  };
}

/** For tests and tools that want quiet unless something is wrong. */
export const silentLogger: Logger = createLogger({ level: "silent" });
