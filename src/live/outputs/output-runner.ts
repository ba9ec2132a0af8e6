import type { Logger } from "../../log.ts";
import type { BroadcastTap } from "../broadcast.ts";
import type { FlvTag } from "../../../media/flv/flv-tag.ts";
import { startOutputSender, type OutputSender, type SenderEvents } from "./output-sender.ts";
import type { OutputChange, OutputRow, OutputStatus, OutputStore } from "./output-store.ts";
import type { OutputTarget } from "./output-target.ts";

/** Reconnect delays while the stream is live: 1 s, doubling, at most 30 s. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.min(attempt, 5));
}
/** A connection up this long starts the next outage's backoff from 1 s again. */
const STABLE_MS = 10_000;
/** Counters (bytes) are written at most this often; status changes at once. */
const BYTES_EVERY_MS = 2000;

/** What the runner needs of a broadcast held here. */
export interface HeldBroadcast {
  subscribe(tap: BroadcastTap): { headers: () => FlvTag[]; unsubscribe: () => void };
}

interface Running {
  row: OutputRow;
  target: OutputTarget;
  status: OutputStatus;
  sender?: OutputSender;
  unsubscribe?: () => void;
  attempts: number;
  nextAt: number;
  activeSince: number | null;
  /** Bytes of earlier connections (and of earlier owners: the row's count when taken). */
  base: number;
  bytes: number;
  writtenBytes: number;
  bytesAt: number;
  failedReported: boolean;
  ended: boolean;
}

/**
 * Runs the declared outputs of the broadcasts this process holds (issue 26):
 * the process with the broadcast's lease is the one with the media, so it is
 * the one that sends. Every `pollMs` (and at once when poked by this
 * process's API) it reads the outputs of its held streams, starts the new
 * ones, stops the deleted ones, retries the failed ones with backoff, and
 * writes statuses back. After a kill -9 the process that takes the broadcast
 * over holds its lease, so its runner starts them there. Nothing is read
 * while no broadcast is held.
 */
export function createOutputRunner(deps: {
  store: OutputStore;
  /** Streams whose broadcast is held here and open (not ending). */
  held: () => string[];
  broadcastOf: (streamId: string) => HeldBroadcast | undefined;
  checkHost: (host: string) => Promise<void>;
  logger: Logger;
  pollMs?: number;
  ffmpeg?: string;
}) {
  const { store, logger } = deps;
  const running = new Map<string, Running>();
  const changes = new Map<string, OutputChange>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let ticking: Promise<void> | null = null;
  let again = false;
  let flushTimer: ReturnType<typeof setTimeout> | undefined;

  function change(r: Running, c: Omit<OutputChange, "id">) {
    const prev = changes.get(r.row.id);
    // Two events before a flush: the first is written now, so neither is lost.
    if (prev?.event && c.event) void flush();
    changes.set(r.row.id, { ...(changes.get(r.row.id) ?? {}), ...c, id: r.row.id });
    flushTimer ??= setTimeout(() => void flush(), 0);
  }

  async function flush() {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    const batch = [...changes.values()];
    changes.clear();
    await store.record(batch).catch((err) => logger.error("Cannot record simulcast output status", { err, count: batch.length }));
  }

  function setStatus(r: Running, status: OutputStatus, extra: Omit<OutputChange, "id" | "status"> = {}) {
    r.status = status;
    change(r, { status, ...extra });
  }

  const log = (r: Running) => ({ output_id: r.row.id, stream_id: r.row.streamId, url: r.row.url });

  async function connect(r: Running) {
    const broadcast = deps.broadcastOf(r.row.streamId);
    if (!broadcast) return;
    try {
      await deps.checkHost(r.target.host);
    } catch (err) {
      // Refused by the outbound guard (the name now resolves to a private address): not retried.
      const message = err instanceof Error ? err.message : String(err);
      logger.warn("Simulcast output refused", { ...log(r), why: message });
      setStatus(r, "failed", { lastError: message, event: "LIVESTREAM_OUTPUT_FAILED" });
      return;
    }
    if (r.ended || !running.has(r.row.id)) return;
    const events: SenderEvents = {
      onActive() {
        r.activeSince = Date.now();
        r.failedReported = false;
        logger.info("Simulcast output active", log(r));
        setStatus(r, "active", { startedAt: r.activeSince, lastError: null, event: "LIVESTREAM_OUTPUT_ACTIVE" });
      },
      onBytes(total) {
        r.bytes = r.base + total;
      },
      onExit(error) {
        r.unsubscribe?.();
        r.unsubscribe = undefined;
        r.sender = undefined;
        r.base = r.bytes;
        if (r.ended || error === null) return;
        if (r.activeSince !== null && Date.now() - r.activeSince >= STABLE_MS) r.attempts = 0;
        r.activeSince = null;
        r.nextAt = Date.now() + reconnectDelayMs(r.attempts++);
        logger.warn("Simulcast output lost its target; reconnecting", { ...log(r), error, retry_in_ms: r.nextAt - Date.now() });
        const first = !r.failedReported;
        r.failedReported = true;
        setStatus(r, "reconnecting", { lastError: error, bytesSent: r.bytes, ...(first ? { event: "LIVESTREAM_OUTPUT_FAILED" as const } : {}) });
      },
    };
    let sender: OutputSender | undefined;
    const sub = broadcast.subscribe({ onTag: (tag) => sender?.push(tag), onEnd: () => endOf(r) });
    sender = startOutputSender({ target: r.target, headers: sub.headers(), events, ffmpeg: deps.ffmpeg });
    r.sender = sender;
    r.unsubscribe = sub.unsubscribe;
    if (r.status !== "connecting" && r.status !== "reconnecting") setStatus(r, "connecting");
  }

  /** The broadcast ended here: the sender flushes and ends; the output is stopped. */
  function endOf(r: Running) {
    if (r.ended) return;
    r.ended = true;
    r.sender?.stop(true);
    running.delete(r.row.id);
    setStatus(r, "stopped", { bytesSent: r.bytes });
  }

  /** Deleted, or the broadcast is no longer ours: stopped now, nothing written (the row is gone or someone else's). */
  function drop(r: Running) {
    r.ended = true;
    r.sender?.stop(false);
    r.unsubscribe?.();
    running.delete(r.row.id);
  }

  async function reconcile() {
    const held = deps.held().filter((id) => deps.broadcastOf(id) !== undefined);
    const rows = held.length === 0 ? [] : await store.ofStreams(held);
    const declared = new Map(rows.map((row) => [row.id, row]));
    for (const r of [...running.values()]) if (!declared.has(r.row.id)) drop(r);
    const now = Date.now();
    for (const row of rows) {
      let r = running.get(row.id);
      if (!r) {
        let target: OutputTarget;
        try {
          target = store.targetOf(row);
        } catch (err) {
          logger.error("Cannot open a simulcast output's target", { err, output_id: row.id, stream_id: row.streamId });
          continue;
        }
        r = {
          row,
          target,
          status: row.status as OutputStatus,
          attempts: 0,
          nextAt: now,
          activeSince: null,
          base: row.bytesSent,
          bytes: row.bytesSent,
          writtenBytes: row.bytesSent,
          bytesAt: now,
          failedReported: false,
          ended: false,
        };
        running.set(row.id, r);
        // A target refused by the guard stays failed for this broadcast.
        if (r.status === "failed" && row.lastError?.startsWith("Refusing")) continue;
        r.status = "idle";
      }
      if (r.status === "failed") continue;
      // Written by someone else meanwhile (a previous owner that lost its lease): ours is the truth.
      if (row.status !== r.status && !changes.has(row.id) && r.status !== "idle") change(r, { status: r.status });
      if (!r.sender && now >= r.nextAt) await connect(r);
      if (r.bytes !== r.writtenBytes && now - r.bytesAt >= BYTES_EVERY_MS) {
        r.writtenBytes = r.bytes;
        r.bytesAt = now;
        change(r, { bytesSent: r.bytes });
      }
    }
    await flush();
  }

  function tick(): Promise<void> {
    if (ticking) {
      again = true;
      return ticking;
    }
    ticking = (async () => {
      do {
        again = false;
        await reconcile().catch((err) => logger.error("Simulcast outputs tick failed", { err }));
      } while (again);
    })().finally(() => {
      ticking = null;
    });
    return ticking;
  }

  return {
    tick,
    /** An output was added or deleted here: acted on now rather than at the next poll. */
    poke: () => void tick(),
    start() {
      timer ??= setInterval(() => {
        if (running.size > 0 || deps.held().length > 0) void tick();
      }, deps.pollMs ?? 500);
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await ticking;
      for (const r of [...running.values()]) drop(r);
      await flush();
    },
    /** Outputs running here with their sender's backlog (bench, metrics). */
    stats: () => [...running.values()].map((r) => ({ id: r.row.id, status: r.status, backlog: r.sender?.backlog ?? 0, skips: r.sender?.skips ?? 0, pid: r.sender?.pid })),
  };
}

export type OutputRunner = ReturnType<typeof createOutputRunner>;
