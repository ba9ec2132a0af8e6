import type { Outbox } from "../outbox/outbox.ts";
import type { Logger } from "../log.ts";
import { deliveryBody } from "./delivery-store.ts";

/** One event as `cli listen` receives it: the exact body a delivery would POST, and what to put in the headers. */
export interface ListenFrame {
  /** The outbox row's id: `X-Service-Delivery` of the forwarded POST (one listener is one "endpoint"). */
  id: string;
  seq: number;
  event: string;
  /** True for an event made by `POST /webhooks/trigger/` (a sample, not a real resource). */
  test: boolean;
  /** The delivery body, byte for byte what a webhook endpoint without `fields` receives. */
  body: string;
}

/** `entity_id` of a triggered sample event in the outbox (the schema has no test column; see decisions.md). */
export const TEST_ENTITY_PREFIX = "test:";

export class ListenLimitReached extends Error {
  override name = "ListenLimitReached";
}

interface Listener {
  orgId: string;
  /** Last seq sent (or the start point): only rows after it are sent. */
  cursor: number;
  events: ReadonlySet<string> | null;
  controller: ReadableStreamDefaultController<Uint8Array>;
  closed: boolean;
}

export interface ListenHubOptions {
  /** Where the events are read (src/outbox). */
  outbox: Outbox;
  logger: Logger;
  /** Shared poll of the outbox while anyone listens (rows another process wrote); commits of this process wake it at once. */
  pollMs?: number;
  /** SSE comment sent this often so proxies and Bun's idle timeout (60 s) keep the connection. */
  heartbeatMs?: number;
  maxPerOrg?: number;
  maxTotal?: number;
  /** Rows read per organization per poll. */
  batch?: number;
  /** Frames a listener may have unread (a stalled client); past it, its stream is closed and it resumes by seq. */
  maxBacklog?: number;
}

const encoder = new TextEncoder();

/**
 * Streams each organization's outbox rows, as they are committed, to its
 * `cli listen` connections (Server-Sent Events). One poller per process for
 * every listener: each tick reads, per organization with listeners, the rows
 * after the lowest cursor (index `outbox_org_seq`), so an event written by any
 * process on the database arrives. Listeners resume by seq (`Last-Event-ID`).
 */
export function createListenHub(opts: ListenHubOptions) {
  const { outbox } = opts;
  const log = opts.logger.child({ component: "webhook-listen" });
  const pollMs = opts.pollMs ?? 250;
  const heartbeatMs = opts.heartbeatMs ?? 15_000;
  const maxPerOrg = opts.maxPerOrg ?? 5;
  const maxTotal = opts.maxTotal ?? 200;
  const batch = opts.batch ?? 500;
  const maxBacklog = opts.maxBacklog ?? 2000;
  const listeners = new Set<Listener>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;

  function send(l: Listener, text: string) {
    if (l.closed) return;
    try {
      l.controller.enqueue(encoder.encode(text));
    } catch {
      drop(l);
    }
  }

  function drop(l: Listener) {
    if (l.closed) return;
    l.closed = true;
    listeners.delete(l);
    try {
      l.controller.close();
    } catch {
      // already cancelled by the client
    }
    if (listeners.size === 0) idle();
  }

  function idle() {
    clearTimeout(timer);
    clearInterval(heartbeat);
    timer = heartbeat = undefined;
  }

  function schedule() {
    if (stopped || listeners.size === 0 || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void tick();
    }, pollMs);
  }

  /** One pass over every organization with listeners; overlapping wake-ups run one more pass after it. */
  function tick(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await readAll();
        } catch (err) {
          if (!stopped) log.warn("Cannot read the outbox for listeners", { err });
        }
      } while (again && !stopped);
    })().finally(() => {
      running = undefined;
      schedule();
    });
    return running;
  }

  async function readAll() {
    const byOrg = new Map<string, Listener[]>();
    for (const l of listeners) byOrg.set(l.orgId, [...(byOrg.get(l.orgId) ?? []), l]);
    for (const [orgId, group] of byOrg) {
      let from = Math.min(...group.map((l) => l.cursor));
      for (;;) {
        const rows = await outbox.readAfter(from, { orgId, limit: batch });
        for (const row of rows) {
          let data: Record<string, unknown>;
          try {
            data = outbox.open(row);
          } catch (err) {
            // Sealed under another secret: skipped (the cursors move past it), not a stop for every later event.
            log.warn("Cannot open an event's payload for listeners", { event_id: row.id, org_id: orgId, err });
            for (const l of group) if (row.seq > l.cursor) l.cursor = row.seq;
            continue;
          }
          const frame: ListenFrame = {
            id: row.id,
            seq: row.seq,
            event: row.event,
            test: row.entityId.startsWith(TEST_ENTITY_PREFIX),
            body: deliveryBody(row.event, row.createdAt, data, []),
          };
          const text = `id: ${row.seq}\nevent: ${row.event}\ndata: ${JSON.stringify(frame)}\n\n`;
          for (const l of group) {
            if (l.closed || row.seq <= l.cursor) continue;
            l.cursor = row.seq;
            if (l.events && !l.events.has(row.event)) continue;
            send(l, text);
            // A client that stopped reading: cut it loose; it reconnects and resumes from what it got.
            if ((l.controller.desiredSize ?? 0) < -maxBacklog) drop(l);
          }
        }
        if (rows.length < batch || stopped) break;
        from = rows.at(-1)!.seq;
      }
    }
  }

  return {
    /**
     * A new listener's SSE stream. `after`: the last seq the client has (resume);
     * absent, it starts with the next event committed. Throws ListenLimitReached
     * past the per-organization or per-process cap.
     */
    async open(orgId: string, o: { after?: number; events?: readonly string[]; signal?: AbortSignal }): Promise<ReadableStream<Uint8Array>> {
      if (stopped) throw new ListenLimitReached("The service is shutting down.");
      const ofOrg = [...listeners].filter((l) => l.orgId === orgId).length;
      if (ofOrg >= maxPerOrg) throw new ListenLimitReached(`At most ${maxPerOrg} listeners per organization.`);
      if (listeners.size >= maxTotal) throw new ListenLimitReached(`At most ${maxTotal} listeners per process.`);
      let cursor = o.after;
      cursor ??= await outbox.lastSeq(orgId);
      const events = o.events && o.events.length > 0 ? new Set(o.events) : null;
      let listener!: Listener;
      const stream = new ReadableStream<Uint8Array>(
        {
          start(controller) {
            listener = { orgId, cursor: cursor!, events, controller, closed: false };
          },
          cancel() {
            drop(listener);
          },
        },
        { highWaterMark: 0 },
      );
      listeners.add(listener);
      // The client went away: free its place now, not at the next failed write.
      o.signal?.addEventListener("abort", () => drop(listener), { once: true });
      // `retry`: the browser EventSource reconnect delay; the comment line flushes headers at once.
      send(listener, `retry: 1000\n: listening after seq ${cursor}\n\n`);
      heartbeat ??= setInterval(() => {
        for (const l of listeners) send(l, ": ping\n\n");
      }, heartbeatMs);
      // Rows already there after `after` (a resume) go out on the first pass.
      void tick();
      return stream;
    },

    /** After a commit of this process wrote outbox rows: read now instead of at the next poll. */
    wake(): void {
      if (listeners.size > 0 && !stopped) void tick();
    },

    count(orgId?: string): number {
      return orgId ? [...listeners].filter((l) => l.orgId === orgId).length : listeners.size;
    },

    /** Ends every stream (clients see the end and reconnect elsewhere or later) and the poller. */
    async stop(): Promise<void> {
      stopped = true;
      for (const l of [...listeners]) drop(l);
      idle();
      await running;
    },
  };
}

export type ListenHub = ReturnType<typeof createListenHub>;
