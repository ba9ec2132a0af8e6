import { open, rename, rm, stat } from "node:fs/promises";
import type { Logger } from "../log.ts";
import type { ObjectStore } from "../storage/object-store.ts";

/**
 * With `STORAGE=s3` a broadcast's FLV is written on the ingesting process's
 * disk (S3 cannot append). So that another process can still finalize it
 * with a recording if that process dies, the file's new bytes are uploaded
 * every RECORDING_PART_MS as plain numbered objects
 * `recordings/<stream>/part-000001.flv`, … : raw consecutive byte ranges of
 * the file (the first starts with the FLV header; a part may end mid-tag).
 * Plain objects, not a multipart upload: those are unreadable until
 * completed and their parts must be ≥ 5 MiB.
 */

/** The folder of a stream's parts. `deletePrefix`/`list` act on `prefix/`, so `str_ab` never reaches `str_abc`'s parts. */
export const partsPrefix = (streamId: string) => `recordings/${streamId}`;
export const partKey = (streamId: string, n: number, at?: number) => `${partsPrefix(streamId)}/part-${String(n).padStart(6, "0")}${at === undefined ? "" : `-at-${at}`}.flv`;
/**
 * `part-N.flv` continues the file; `part-N-at-B.flv` (the first part of a
 * process that took the broadcast over) is written at byte B, cutting what
 * the parts before it held past B (a dead owner's last tag, cut mid-way).
 */
const PART_NAME = /\/part-(\d{6,})(?:-at-(\d+))?\.flv$/;

/** The parts in the bucket, numbered 1, 2, … without a gap (what assembly uses). */
async function contiguousParts(objects: ObjectStore, streamId: string): Promise<{ n: number; key: string; at?: number; size: number }[]> {
  const numbered: { n: number; key: string; at?: number; size: number }[] = [];
  for await (const o of objects.list(partsPrefix(streamId))) {
    const m = PART_NAME.exec(o.key);
    if (m) numbered.push({ n: Number(m[1]), key: o.key, size: o.size, ...(m[2] !== undefined ? { at: Number(m[2]) } : {}) });
  }
  numbered.sort((a, b) => a.n - b.n);
  const used: typeof numbered = [];
  for (const p of numbered) {
    if (p.n !== used.length + 1) break;
    used.push(p);
  }
  return used;
}

/** How far the bucket's parts go: the next part's number and the file length they make. */
export async function partsEnd(objects: ObjectStore, streamId: string): Promise<{ next: number; length: number }> {
  let length = 0;
  const used = await contiguousParts(objects, streamId);
  for (const p of used) length = (p.at ?? length) + p.size;
  return { next: used.length + 1, length };
}

/** Largest part read into memory at once: a store slower than the ticks leaves a backlog, sent as several parts in a row. */
export const MAX_PART_BYTES = 32 * 1024 * 1024;

export interface PartStats {
  parts: number;
  bytes: number;
  totalMs: number;
  maxMs: number;
}

export interface PartUploader {
  /**
   * Starts the ticks (the file exists). Idempotent. `from`: a taken-over
   * broadcast's file continues parts already in the bucket: the first part
   * is number `next`, from byte `offset` (named with it).
   */
  start(from?: { offset: number; next: number }): void;
  /**
   * Stops the ticks and waits for an upload under way. `rest`: then uploads
   * what is left of the file (a graceful stop: the next process may be on
   * another machine); without it (finalize uploads the whole file anyway,
   * or the broadcast was taken over) nothing more is sent.
   */
  stop(opts?: { rest?: boolean }): Promise<void>;
  /** Uploads everything new now (sequential with the ticks). For tests and `stop({ rest })`. */
  flush(): Promise<void>;
  readonly stats: PartStats;
  /** Bytes of the file already in the bucket. */
  readonly offset: number;
}

/**
 * Uploads the growth of `path` every `intervalMs`. One upload at a time per
 * broadcast: a tick that finds the previous one still running does nothing,
 * and the next takes everything new since the last uploaded offset, so a
 * slow store never holds the ingest (which only appends to the file). A tick
 * with no new bytes uploads nothing.
 */
export function createPartUploader(opts: { streamId: string; path: string; objects: ObjectStore; intervalMs: number; logger: Logger; maxPartBytes?: number }): PartUploader {
  const { streamId, path, objects, logger } = opts;
  const maxPartBytes = opts.maxPartBytes ?? MAX_PART_BYTES;
  const stats: PartStats = { parts: 0, bytes: 0, totalMs: 0, maxMs: 0 };
  let offset = 0;
  let next = 1;
  // The first part of a take-over is named with its offset (it may cut the dead owner's last part).
  let firstAt: number | undefined;
  let timer: ReturnType<typeof setInterval> | null = null;
  // Uploads run one after the other on this chain; `pending` counts those queued or under way.
  let chain: Promise<void> = Promise.resolve();
  let pending = 0;

  async function uploadNew(): Promise<void> {
    // The writer only appends, so every byte below the size seen now is final.
    const size = await stat(path).then(
      (s) => s.size,
      () => 0,
    );
    while (offset < size) {
      const end = Math.min(size, offset + maxPartBytes);
      const bytes = await Bun.file(path).slice(offset, end).bytes();
      if (bytes.length === 0) return;
      const started = performance.now();
      const key = partKey(streamId, next, firstAt);
      firstAt = undefined;
      await objects.putBytes(key, bytes, { type: "video/x-flv" });
      const ms = performance.now() - started;
      offset += bytes.length;
      next++;
      stats.parts++;
      stats.bytes += bytes.length;
      stats.totalMs += ms;
      stats.maxMs = Math.max(stats.maxMs, ms);
      logger.debug("Recording part uploaded", { stream_id: streamId, part: next - 1, bytes: bytes.length, offset, upload_ms: Math.round(ms) });
    }
  }

  /** Runs after any upload under way (never two at once). */
  function run(): Promise<void> {
    pending++;
    const current = chain.then(uploadNew).finally(() => pending--);
    chain = current.catch(() => undefined);
    return current;
  }

  function tick() {
    if (pending > 0) return; // still uploading: the next tick takes everything new since
    run().catch((err) => logger.warn("Cannot upload a recording part; retried at the next tick", { err, stream_id: streamId, part: next, offset }));
  }

  return {
    stats,
    get offset() {
      return offset;
    },
    start(from) {
      if (timer) return;
      if (from) {
        offset = from.offset;
        next = from.next;
        firstAt = from.offset;
      }
      timer = setInterval(tick, opts.intervalMs);
    },
    flush: () => run(),
    async stop(stopOpts = {}) {
      if (timer) clearInterval(timer);
      timer = null;
      await chain;
      if (stopOpts.rest) await run();
    },
  };
}

/**
 * A dead owner's parts, downloaded in order and concatenated into `dest`
 * (written beside it, then renamed: a crash leaves no half file at `dest`).
 * A part named `-at-B` is written at byte B (a take-over's first part).
 * Stops at the first missing number (bytes after a gap would not continue
 * the file). Answers the parts and bytes used; 0 parts writes nothing.
 */
export async function assembleParts(objects: ObjectStore, streamId: string, dest: string): Promise<{ parts: number; bytes: number }> {
  const used = await contiguousParts(objects, streamId);
  if (used.length === 0) return { parts: 0, bytes: 0 };
  const partial = `${dest}.assembling`;
  const handle = await open(partial, "w");
  let bytes = 0;
  try {
    for (const p of used) {
      const data = new Uint8Array(await new Response(objects.body(p.key)).arrayBuffer());
      if (p.at !== undefined && p.at < bytes) await handle.truncate(p.at);
      if (p.at !== undefined) bytes = p.at;
      let off = 0;
      while (off < data.length) off += (await handle.write(data, off, data.length - off, bytes + off)).bytesWritten;
      bytes += data.length;
    }
    await handle.datasync();
  } catch (err) {
    await handle.close().catch(() => undefined);
    await rm(partial, { force: true });
    throw err;
  }
  await handle.close();
  await rename(partial, dest);
  return { parts: used.length, bytes };
}
