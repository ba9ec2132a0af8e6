import { expandConfig } from "@libsql/core/config";
import { encodeBaseUrl } from "@libsql/core/uri";
import * as hrana from "@libsql/hrana-client";
import { boundedBy } from "../dependency-errors.ts";

/**
 * The hot-path reads on a libSQL server through one long-lived Hrana stream instead of `client.execute`, which opens
 * a stream (a server connection) for every statement and closes it: measured on sqld 0.24, a one-row read cost
 * the server ~0.6–0.8 ms of CPU that way and ~0.14–0.3 ms on a kept stream (ws, http), and reads asked for together
 * go in one pipeline request (HTTP) or one socket write (ws). Each statement runs in autocommit mode, so it reads
 * the last commit of any writer, as a fresh stream would. A stream that fails (idle expiry after ~10 s, a dropped
 * socket) is dropped and the read is made once more on a new one: reads are idempotent.
 */
export interface StreamReader {
  all(sql: string, args: unknown[]): Promise<unknown[][]>;
  close(): void;
}

export function createStreamReader(opts: { url: string; authToken?: string; timeoutMs: number; fetch?: (r: Request) => Promise<Response> }): StreamReader {
  const config = expandConfig({ url: opts.url, authToken: opts.authToken }, true);
  const client =
    config.scheme === "ws" || config.scheme === "wss"
      ? hrana.openWs(encodeBaseUrl(config.scheme, config.authority, config.path), opts.authToken)
      : hrana.openHttp(encodeBaseUrl(config.scheme, config.authority, config.path), opts.authToken, opts.fetch as never);
  let stream: hrana.Stream | null = null;

  async function once(sql: string, args: unknown[]): Promise<unknown[][]> {
    stream ??= client.openStream();
    const res = await stream.query([sql, args as hrana.InValue[]]);
    return res.rows.map((row) => Array.from(row as ArrayLike<unknown>));
  }

  return {
    all(sql, args) {
      const read = once(sql, args).catch(() => {
        // The stream failed (expired, closed, network; or the statement, which then fails again): a new one, once.
        stream?.close();
        stream = null;
        return once(sql, args);
      });
      return boundedBy(read, opts.timeoutMs, "database", "read");
    },
    close() {
      stream?.close();
      client.close();
    },
  };
}
