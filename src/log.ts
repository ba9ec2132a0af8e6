/**
 * Structured logs: one JSON object per line on stdout, tagged with whatever ids
 * the caller binds (org_id, video_id, stream_id, ...). `child` binds tags once
 * so every line of a job or request carries them.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogTags = Record<string, unknown>;

export interface Logger {
  debug(msg: string, tags?: LogTags): void;
  info(msg: string, tags?: LogTags): void;
  warn(msg: string, tags?: LogTags): void;
  error(msg: string, tags?: LogTags): void;
  child(tags: LogTags): Logger;
}

const ORDER: Record<LogLevel | "silent", number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

function serializeError(err: unknown): unknown {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return err;
}

export function createLogger(opts: { level?: LogLevel | "silent"; tags?: LogTags; write?: (line: string) => void } = {}): Logger {
  const min = ORDER[opts.level ?? "info"];
  const base = opts.tags ?? {};
  const write = opts.write ?? ((line: string) => process.stdout.write(line + "\n"));
  const emit = (level: LogLevel, msg: string, tags?: LogTags) => {
    if (ORDER[level] < min) return;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...base, ...tags };
    if ("err" in entry) entry.err = serializeError(entry.err);
    write(JSON.stringify(entry));
  };
  return {
    debug: (m, t) => emit("debug", m, t),
    info: (m, t) => emit("info", m, t),
    warn: (m, t) => emit("warn", m, t),
    error: (m, t) => emit("error", m, t),
    child: (tags) => createLogger({ level: opts.level, tags: { ...base, ...tags }, write }),
  };
}

/** For tests and tools that want quiet unless something is wrong. */
export const silentLogger: Logger = createLogger({ level: "silent" });
