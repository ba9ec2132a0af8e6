import { open } from "node:fs/promises";
import { FLV_HEADER_SIZE, FLV_PREVIOUS_TAG_SIZE_SIZE, FLV_TAG_HEADER_SIZE, flvTagTypeFromCode, type FlvTag } from "./flv-tag.ts";

export type { FlvTag, FlvTagType } from "./flv-tag.ts";

export class FlvFormatError extends Error {
  override readonly name = "FlvFormatError";
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`FLV ${field}: ${detail}`);
  }
}

export interface FlvHeader {
  version: number;
  hasAudio: boolean;
  hasVideo: boolean;
  /** Byte offset of PreviousTagSize0 (normally 9). */
  dataOffset: number;
}

const SIGNATURE = [0x46, 0x4c, 0x56]; // "FLV"

/**
 * Returns null when `bytes` is too short to hold a header but is a valid
 * prefix of one: a recording killed right after creation is empty, not corrupt.
 */
export function parseFlvHeader(bytes: Uint8Array): FlvHeader | null {
  for (let i = 0; i < SIGNATURE.length && i < bytes.length; i++) {
    if (bytes[i] !== SIGNATURE[i]) throw new FlvFormatError("signature", 'not an FLV file (expected "FLV")');
  }
  if (bytes.length < FLV_HEADER_SIZE) return null;
  const flags = bytes[4]!;
  const dataOffset = readU32(bytes, 5);
  if (dataOffset < FLV_HEADER_SIZE) throw new FlvFormatError("DataOffset", `must be >= 9, got ${dataOffset}`);
  return { version: bytes[3]!, hasAudio: (flags & 0x04) !== 0, hasVideo: (flags & 0x01) !== 0, dataOffset };
}

/**
 * Iterates the tags of a whole FLV file held in memory. Payloads are views into
 * `bytes` (no copy). A file cut anywhere (kill -9 mid-write) yields every tag
 * whose body is complete and then stops, without throwing.
 */
export function* readFlvTags(bytes: Uint8Array): Generator<FlvTag> {
  const header = parseFlvHeader(bytes);
  if (!header) return;
  let offset = header.dataOffset + FLV_PREVIOUS_TAG_SIZE_SIZE;
  for (;;) {
    const parsed = parseTagAt(bytes, offset);
    if (!parsed) return;
    offset = parsed.next;
    if (parsed.tag) yield parsed.tag;
  }
}

export interface ReadFlvFileOptions {
  /** Read size; the default keeps memory flat for multi-GB recordings. */
  chunkSize?: number;
}

/**
 * Streams the tags of an FLV file without loading it whole. Each payload is a
 * fresh copy, safe to keep. Same truncation tolerance as readFlvTags.
 */
export async function* readFlvFile(path: string, options: ReadFlvFileOptions = {}): AsyncGenerator<FlvTag> {
  const chunkSize = options.chunkSize ?? 1 << 20;
  const handle = await open(path, "r");
  try {
    let pending: Uint8Array = new Uint8Array(0);
    let headerParsed = false;
    let skip = 0; // bytes still to drop before the next tag (header, PreviousTagSize)
    let position = 0;
    for (;;) {
      const chunk = new Uint8Array(chunkSize);
      const { bytesRead } = await handle.read(chunk, 0, chunkSize, position);
      if (bytesRead === 0) return;
      position += bytesRead;
      pending = concat(pending, chunk.subarray(0, bytesRead));
      if (!headerParsed) {
        const header = parseFlvHeader(pending);
        if (!header) continue;
        headerParsed = true;
        skip = header.dataOffset + FLV_PREVIOUS_TAG_SIZE_SIZE;
      }
      const dropped = Math.min(skip, pending.length);
      pending = pending.subarray(dropped);
      skip -= dropped;
      if (skip > 0) continue;
      let offset = 0;
      for (;;) {
        const parsed = parseTagAt(pending, offset);
        if (!parsed) break;
        offset = parsed.next;
        if (parsed.tag) yield { ...parsed.tag, payload: parsed.tag.payload.slice() };
      }
      // Keep only the unconsumed tail so memory stays about one tag + one chunk.
      skip = Math.max(0, offset - pending.length);
      pending = pending.subarray(Math.min(offset, pending.length));
    }
  } finally {
    await handle.close();
  }
}

/**
 * Parses the tag starting at `offset`. Returns null when the tag (header or
 * body) is incomplete; `tag` is null for tag types we do not know (skipped).
 * The trailing PreviousTagSize is not required: it carries no information and a
 * file may be cut right before it.
 */
function parseTagAt(bytes: Uint8Array, offset: number): { tag: FlvTag | null; next: number } | null {
  if (offset + FLV_TAG_HEADER_SIZE > bytes.length) return null;
  const typeByte = bytes[offset]!;
  const dataSize = readU24(bytes, offset + 1);
  const bodyStart = offset + FLV_TAG_HEADER_SIZE;
  const bodyEnd = bodyStart + dataSize;
  if (bodyEnd > bytes.length) return null;
  const timestamp = (readU24(bytes, offset + 4) | (bytes[offset + 7]! << 24)) >>> 0;
  // Bit 5 is the "filter" (encrypted) flag; such tags cannot be used as-is.
  const type = typeByte & 0x20 ? null : flvTagTypeFromCode(typeByte & 0x1f);
  const next = bodyEnd + FLV_PREVIOUS_TAG_SIZE_SIZE;
  return { tag: type ? { type, timestamp, payload: bytes.subarray(bodyStart, bodyEnd) } : null, next };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function readU24(b: Uint8Array, o: number): number {
  return (b[o]! << 16) | (b[o + 1]! << 8) | b[o + 2]!;
}

function readU32(b: Uint8Array, o: number): number {
  return ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
}
