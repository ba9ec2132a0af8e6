import { open } from "node:fs/promises";
import { parseFlvHeader } from "./flv-reader.ts";
import { FLV_HEADER_SIZE, FLV_PREVIOUS_TAG_SIZE_SIZE, FLV_TAG_HEADER_SIZE } from "./flv-tag.ts";

/** Where a recording cut off (kill -9) can be continued: after its last whole tag. */
export interface FlvContinuation {
  /** Byte offset just after the last complete tag (its PreviousTagSize included): the file is truncated here and appended to. */
  offset: number;
  /** Largest audio/video timestamp among the complete tags (ms), -1 when there is none. */
  lastTimestampMs: number;
  tags: number;
}

const WINDOW = 1 << 20;

/**
 * Walks the tag headers of an FLV file (bodies are skipped, read 1 MiB at a
 * time) up to the last tag whose body and PreviousTagSize are complete.
 * Null when there is no file or not even a whole header. A tag counts only
 * with its PreviousTagSize, so appending whole tags at `offset` gives a
 * file that reads as one.
 */
export async function flvContinuation(path: string): Promise<FlvContinuation | null> {
  const handle = await open(path, "r").catch(() => null);
  if (!handle) return null;
  try {
    const size = (await handle.stat()).size;
    const head = new Uint8Array(FLV_HEADER_SIZE);
    await handle.read(head, 0, FLV_HEADER_SIZE, 0);
    const header = size >= FLV_HEADER_SIZE ? parseFlvHeader(head) : null;
    if (!header) return null;
    let offset = header.dataOffset + FLV_PREVIOUS_TAG_SIZE_SIZE;
    if (offset > size) return null;
    let window = new Uint8Array(0);
    let windowStart = 0;
    let lastTimestampMs = -1;
    let tags = 0;
    while (offset + FLV_TAG_HEADER_SIZE <= size) {
      if (offset < windowStart || offset + FLV_TAG_HEADER_SIZE > windowStart + window.length) {
        window = new Uint8Array(Math.min(WINDOW, size - offset));
        await handle.read(window, 0, window.length, offset);
        windowStart = offset;
      }
      const h = window.subarray(offset - windowStart);
      const bodySize = (h[1]! << 16) | (h[2]! << 8) | h[3]!;
      const next = offset + FLV_TAG_HEADER_SIZE + bodySize + FLV_PREVIOUS_TAG_SIZE_SIZE;
      if (next > size) break;
      const type = h[0]! & 0x1f;
      if (type === 8 || type === 9) lastTimestampMs = Math.max(lastTimestampMs, h[7]! * 2 ** 24 + ((h[4]! << 16) | (h[5]! << 8) | h[6]!));
      tags++;
      offset = next;
    }
    return { offset, lastTimestampMs, tags };
  } finally {
    await handle.close();
  }
}
