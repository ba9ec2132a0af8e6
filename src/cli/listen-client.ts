import { signatureHeader } from "../webhooks/sign.ts";
import type { ListenFrame } from "../webhooks/listen-hub.ts";

export interface ListenClientOptions {
  apiUrl: string;
  apiKey: string;
  forwardTo: string;
  events: string[];
  /** The session's signing secret: every forwarded POST is signed with it, as an endpoint's deliveries are. */
  secret: string;
  /** One line per event and per connection change. */
  print: (line: string) => void;
  warn: (line: string) => void;
  signal: AbortSignal;
  /** Forwarded POSTs give up after this long (the service's delivery timeout). */
  forwardTimeoutMs?: number;
}

/** Not worth retrying: the key or the request is wrong. */
export class ListenRefused extends Error {
  override name = "ListenRefused";
}

const BACKOFF_MS = [500, 1000, 2000, 5000, 10_000];

/** Splits an SSE byte stream into events: `{id, event, data}` per blank-line-terminated block; comments dropped. */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ id?: string; event?: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const out: { id?: string; event?: string; data: string } = { data: "" };
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        if (colon === 0) continue;
        const key = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (key === "id") out.id = value;
        else if (key === "event") out.event = value;
        else if (key === "data") out.data += out.data ? `\n${value}` : value;
      }
      if (out.data) yield out;
    }
  }
}

/** POSTs one event to the local receiver with the headers of a real delivery; the answer's status, or the error. */
async function forward(o: ListenClientOptions, frame: ListenFrame): Promise<string> {
  try {
    const res = await fetch(o.forwardTo, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "vidlive-cli-listen/1",
        "x-service-event": frame.event,
        "x-service-delivery": frame.id,
        "x-service-signature": signatureHeader(o.secret, frame.body, Date.now() / 1000),
      },
      body: frame.body,
      redirect: "manual",
      signal: AbortSignal.any([o.signal, AbortSignal.timeout(o.forwardTimeoutMs ?? 10_000)]),
    });
    await res.arrayBuffer().catch(() => undefined);
    return String(res.status);
  } catch (err) {
    return `failed (${err instanceof Error ? err.message : String(err)})`;
  }
}

/**
 * Follows the service's event stream and forwards each event, in order, until
 * `signal` aborts. A dropped connection (the service restarting, the network)
 * reconnects with backoff and resumes after the last seq received, so no
 * event is lost or forwarded twice. Throws ListenRefused for 401/403/422.
 */
export async function runListen(o: ListenClientOptions): Promise<void> {
  const url = new URL("/api/public/v1/webhooks/listen/", o.apiUrl.endsWith("/") ? o.apiUrl : `${o.apiUrl}/`);
  if (o.events.length) url.searchParams.set("events", o.events.join(","));
  let lastSeq: string | undefined;
  let failures = 0;
  let announced = false;
  while (!o.signal.aborted) {
    let reason: string;
    try {
      const res = await fetch(url, {
        headers: { authorization: `Bearer ${o.apiKey}`, accept: "text/event-stream", ...(lastSeq ? { "last-event-id": lastSeq } : {}) },
        signal: o.signal,
      });
      if (res.status === 401 || res.status === 403 || res.status === 422) {
        const body = (await res.json().catch(() => null)) as { error?: { code?: string; details?: unknown }; message?: string } | null;
        throw new ListenRefused(`${body?.error?.code ?? `HTTP ${res.status}`}: ${body?.message ?? ""}${body?.error?.details ? ` ${JSON.stringify(body.error.details)}` : ""}`);
      }
      if (res.status !== 200 || !res.body) {
        await res.arrayBuffer().catch(() => undefined);
        reason = `HTTP ${res.status}`;
      } else {
        failures = 0;
        if (!announced) o.print(`Ready: listening to ${o.apiUrl} and forwarding to ${o.forwardTo} (Ctrl-C to stop)`);
        else o.warn(`Reconnected${lastSeq ? `, resuming after event seq ${lastSeq}` : ""}`);
        announced = true;
        for await (const e of sseEvents(res.body)) {
          const frame = JSON.parse(e.data) as ListenFrame;
          const status = await forward(o, frame);
          // Forwarded (whatever the receiver answered): a reconnect resumes after it.
          lastSeq = e.id ?? String(frame.seq);
          o.print(`${new Date().toISOString()}  ${frame.event.padEnd(28)} ${frame.id}${frame.test ? " (test)" : ""}  → ${status}`);
        }
        reason = "the service closed the stream";
      }
    } catch (err) {
      if (err instanceof ListenRefused || o.signal.aborted) {
        if (o.signal.aborted) return;
        throw err;
      }
      reason = err instanceof Error ? err.message : String(err);
    }
    const wait = BACKOFF_MS[Math.min(failures++, BACKOFF_MS.length - 1)]!;
    o.warn(`Connection lost (${reason}); reconnecting in ${wait / 1000} s`);
    await Bun.sleep(wait).then(() => undefined);
  }
}
