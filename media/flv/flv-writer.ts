import { open, truncate, type FileHandle } from "node:fs/promises";
import { FLV_HEADER_SIZE, FLV_MAX_TAG_BODY_SIZE, FLV_PREVIOUS_TAG_SIZE_SIZE, FLV_TAG_HEADER_SIZE, FLV_TAG_TYPE_CODE, type FlvTag } from "./flv-tag.ts";
import { stripSetDataFrame } from "./script-data.ts";

export class FlvWriterError extends Error {
  override readonly name = "FlvWriterError";
  constructor(
    readonly field: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`FLV writer ${field}: ${detail}`, options);
  }
}

export interface FlvWriterOptions {
  hasAudio: boolean;
  hasVideo: boolean;
  /** Longest time a written tag may sit in memory before it reaches the file. */
  flushIntervalMs?: number;
  /** Buffered bytes that trigger an immediate flush. */
  flushBytes?: number;
  /** Buffered + in-flight bytes above which write() waits (backpressure). */
  highWaterMark?: number;
  /**
   * Continue an existing recording instead of starting one: the file is cut
   * at this offset (after its last whole tag, flv-continuation.ts) and tags
   * are appended there; no header is written.
   */
  appendAt?: number;
}

export interface FlvWriter {
  readonly path: string;
  /** Queues one tag. Resolves at once unless the writer is over its high-water mark. */
  write(tag: FlvTag): Promise<void>;
  /** Forces buffered tags to the file. */
  flush(): Promise<void>;
  /** Flushes, syncs to disk and closes. Further writes throw. */
  close(): Promise<void>;
  /** Closes without writing what is still buffered (the file is another process's now). Further writes throw. */
  abandon(): Promise<void>;
  readonly tagsWritten: number;
  /** Bytes handed to the OS so far (header included). */
  readonly bytesWritten: number;
}

/**
 * Appends an FLV recording as tags arrive. Crash safety comes from the format:
 * every append is a run of whole tags, so a file cut by kill -9 anywhere is a
 * valid prefix that readFlvTags (and ffmpeg) read up to the last complete tag.
 * Batching keeps syscalls to ~10/s at the default interval instead of one per tag.
 */
export async function createFlvWriter(path: string, options: FlvWriterOptions): Promise<FlvWriter> {
  const flushIntervalMs = options.flushIntervalMs ?? 100;
  const flushBytes = options.flushBytes ?? 256 * 1024;
  const highWaterMark = options.highWaterMark ?? 4 * 1024 * 1024;
  if (options.appendAt !== undefined) await truncate(path, options.appendAt);
  const handle: FileHandle = await open(path, options.appendAt !== undefined ? "a" : "w");

  let pending: Uint8Array[] = options.appendAt !== undefined ? [] : [encodeFlvHeader(options)];
  let pendingBytes = pending[0]?.length ?? 0;
  let inflight: Promise<void> | null = null;
  let inflightBytes = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let failure: unknown = null;
  let closed = false;
  let tagsWritten = 0;
  let bytesWritten = options.appendAt ?? 0;

  async function writeAll(chunks: Uint8Array[]): Promise<void> {
    const total = chunks.reduce((n, c) => n + c.length, 0);
    const { bytesWritten: n } = await handle.writev(chunks);
    // A short write on a regular file means trouble (ENOSPC-ish); finish the rest plainly.
    let done = n;
    if (done < total) {
      const rest = concat(chunks).subarray(done);
      let off = 0;
      while (off < rest.length) {
        const r = await handle.write(rest, off, rest.length - off);
        if (r.bytesWritten === 0) throw new FlvWriterError("file", `short write to ${path}`);
        off += r.bytesWritten;
      }
      done = total;
    }
    bytesWritten += done;
  }

  function startFlush(): Promise<void> {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    if (inflight) return inflight.then(() => (pending.length ? startFlush() : undefined));
    if (pending.length === 0) return Promise.resolve();
    const chunks = pending;
    inflightBytes = pendingBytes;
    pending = [];
    pendingBytes = 0;
    inflight = writeAll(chunks)
      .catch((err) => {
        failure ??= new FlvWriterError("file", `append to ${path} failed: ${String(err)}`, { cause: err });
      })
      .finally(() => {
        inflight = null;
        inflightBytes = 0;
      });
    return inflight;
  }

  function throwIfFailed(): void {
    if (failure) throw failure;
  }

  // The header goes out at once so even an empty recording is a recognisable FLV.
  await startFlush();
  throwIfFailed();

  return {
    path,
    get tagsWritten() {
      return tagsWritten;
    },
    get bytesWritten() {
      return bytesWritten;
    },
    async write(tag) {
      if (closed) throw new FlvWriterError("state", "write after close");
      throwIfFailed();
      const encoded = encodeFlvTag(tag);
      pending.push(encoded);
      pendingBytes += encoded.length;
      tagsWritten++;
      if (pendingBytes >= flushBytes) void startFlush();
      else timer ??= setTimeout(() => void startFlush(), flushIntervalMs);
      while (pendingBytes + inflightBytes > highWaterMark && !failure) await startFlush();
      throwIfFailed();
    },
    async flush() {
      await startFlush();
      throwIfFailed();
    },
    async abandon() {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      pending = [];
      pendingBytes = 0;
      await inflight;
      await handle.close();
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await startFlush();
        if (!failure) await handle.datasync();
      } finally {
        await handle.close();
      }
      throwIfFailed();
    },
  };
}

export function encodeFlvHeader({ hasAudio, hasVideo }: { hasAudio: boolean; hasVideo: boolean }): Uint8Array {
  const b = new Uint8Array(FLV_HEADER_SIZE + FLV_PREVIOUS_TAG_SIZE_SIZE);
  b.set([0x46, 0x4c, 0x56, 0x01, (hasAudio ? 0x04 : 0) | (hasVideo ? 0x01 : 0), 0, 0, 0, FLV_HEADER_SIZE]);
  // PreviousTagSize0 stays 0.
  return b;
}

/** One whole tag: header + body + PreviousTagSize, in one buffer (the payload is copied). */
export function encodeFlvTag(tag: FlvTag): Uint8Array {
  const body = tag.type === "data" ? stripSetDataFrame(tag.payload) : tag.payload;
  if (body.length > FLV_MAX_TAG_BODY_SIZE) {
    throw new FlvWriterError("DataSize", `tag body of ${body.length} bytes exceeds 16 MiB`);
  }
  // FLV timestamps are unsigned 32-bit: lower 24 bits + an "extended" high byte.
  const ts = Math.max(0, Math.floor(tag.timestamp)) >>> 0;
  const size = FLV_TAG_HEADER_SIZE + body.length;
  const b = new Uint8Array(size + FLV_PREVIOUS_TAG_SIZE_SIZE);
  b[0] = FLV_TAG_TYPE_CODE[tag.type];
  b[1] = body.length >>> 16;
  b[2] = body.length >>> 8;
  b[3] = body.length;
  b[4] = ts >>> 16;
  b[5] = ts >>> 8;
  b[6] = ts;
  b[7] = ts >>> 24;
  // StreamID (8..10) is always 0.
  b.set(body, FLV_TAG_HEADER_SIZE);
  b[size] = size >>> 24;
  b[size + 1] = size >>> 16;
  b[size + 2] = size >>> 8;
  b[size + 3] = size;
  return b;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}
