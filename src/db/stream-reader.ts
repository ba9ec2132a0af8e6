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
  const tls = config.scheme === "https" || config.scheme === "wss";
  // `libsql:` lets the client choose: a WebSocket here (measured on sqld: about half the CPU per read of HTTP, on
  // both sides), HTTP again for good if the socket never answers (a proxy without WebSockets). `http(s):` stays HTTP.
  let ws = config.scheme === "ws" || config.scheme === "wss" || opts.url.startsWith("libsql:");
  let answered = false;
  const open = (): hrana.Client =>
    ws
      ? hrana.openWs(encodeBaseUrl(tls ? "wss" : "ws", config.authority, config.path), opts.authToken)
      : hrana.openHttp(encodeBaseUrl(tls ? "https" : "http", config.authority, config.path), opts.authToken, opts.fetch as never);
  let client = open();
  let stream: hrana.Stream | null = null;
  let closed = false;

  async function once(sql: string, args: unknown[]): Promise<unknown[][]> {
    stream ??= client.openStream();
    const res = await stream.query([sql, args as hrana.InValue[]]);
    answered = true;
    return res.rows.map((row) => Array.from(row as ArrayLike<unknown>));
  }

  function reopen(failed: hrana.Client): void {
    // Several reads fail together when a connection drops: the first one reopens, the others use its new client.
    if (closed || client !== failed) return;
    stream?.close();
    stream = null;
    client.close();
    if (ws && !answered && !opts.url.startsWith("ws")) ws = false;
    client = open();
  }

  return {
    all(sql, args) {
      // The stream or its connection failed (expired, closed, network; or the statement, which then fails again): a new one, once.
      if (closed) return Promise.reject(new Error("Cannot read: database is closed"));
      const used = client;
      const read = once(sql, args).catch((err) => {
        if (closed) throw err;
        reopen(used);
        return once(sql, args);
      });
      return boundedBy(read, opts.timeoutMs, "database", "read");
    },
    close() {
      closed = true;
      stream?.close();
      client.close();
    },
  };
}
