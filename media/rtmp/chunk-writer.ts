/**
 * Splits messages into chunks (spec section 5.3) with header compression.
 *
 * fmt 3 is only used to start a message when the previous header on that
 * chunk stream was fmt 1 or 2: after a fmt 0, receivers disagree on what a
 * bare fmt 3 means (delta 0 in nginx-rtmp, "the absolute value again" in
 * ffmpeg and SRS), so we spell the delta out with fmt 2 instead.
 */
import { RtmpProtocolError } from "./errors.ts";
import type { RtmpMessage } from "./message-types.ts";

interface SentHeader {
  typeId: number;
  streamId: number;
  length: number;
  timestamp: number;
  /** The delta the last fmt 1/2 header carried; null after a fmt 0 header. */
  delta: number | null;
}

export class ChunkWriter {
  private chunkSize = 128;
  private readonly sent = new Map<number, SentHeader>();

  get outgoingChunkSize(): number {
    return this.chunkSize;
  }

  /** Call after the Set Chunk Size message announcing `size` has been encoded. */
  setChunkSize(size: number): void {
    if (!Number.isInteger(size) || size < 1 || size > 0x7fffffff) throw new RtmpProtocolError(`invalid chunk size ${size}`);
    this.chunkSize = size;
  }

  /** All chunks of one message, ready to write to the socket. */
  encode(message: RtmpMessage): Uint8Array {
    const { chunkStreamId: csid, typeId, streamId, payload } = message;
    if (csid < 2 || csid > 65599) throw new RtmpProtocolError(`invalid chunk stream id ${csid}`);
    if (payload.length > 0xffffff) throw new RtmpProtocolError(`message of ${payload.length} bytes exceeds the 24-bit length field`);
    const timestamp = message.timestamp >>> 0;
    const prev = this.sent.get(csid);

    let fmt: 0 | 1 | 2 | 3;
    let field: number;
    const delta = prev ? timestamp - prev.timestamp : -1;
    if (!prev || prev.streamId !== streamId || delta < 0) {
      fmt = 0;
      field = timestamp;
    } else if (prev.typeId !== typeId || prev.length !== payload.length) {
      fmt = 1;
      field = delta;
    } else if (prev.delta === delta) {
      fmt = 3;
      field = delta;
    } else {
      fmt = 2;
      field = delta;
    }
    this.sent.set(csid, { typeId, streamId, length: payload.length, timestamp, delta: fmt === 0 ? null : delta });

    const extended = field >= 0xffffff;
    const basicSize = csid < 64 ? 1 : csid < 320 ? 2 : 3;
    const headerSize = basicSize + [11, 7, 3, 0][fmt]! + (extended ? 4 : 0);
    const chunkCount = Math.max(1, Math.ceil(payload.length / this.chunkSize));
    const continuationSize = basicSize + (extended ? 4 : 0);
    const out = new Uint8Array(headerSize + (chunkCount - 1) * continuationSize + payload.length);
    const view = new DataView(out.buffer);

    let o = writeBasicHeader(out, 0, fmt, csid);
    if (fmt <= 2) {
      writeU24(out, o, extended ? 0xffffff : field);
      o += 3;
    }
    if (fmt <= 1) {
      writeU24(out, o, payload.length);
      out[o + 3] = typeId;
      o += 4;
    }
    if (fmt === 0) {
      view.setUint32(o, streamId, true);
      o += 4;
    }
    if (extended) {
      view.setUint32(o, field);
      o += 4;
    }
    for (let offset = 0; ; ) {
      const end = Math.min(offset + this.chunkSize, payload.length);
      out.set(payload.subarray(offset, end), o);
      o += end - offset;
      offset = end;
      if (offset >= payload.length) break;
      // Continuation chunks repeat the extended timestamp (ffmpeg and the spec do; readers expect it).
      o = writeBasicHeader(out, o, 3, csid);
      if (extended) {
        view.setUint32(o, field);
        o += 4;
      }
    }
    return out;
  }
}

function writeBasicHeader(out: Uint8Array, o: number, fmt: number, csid: number): number {
  if (csid < 64) {
    out[o] = (fmt << 6) | csid;
    return o + 1;
  }
  if (csid < 320) {
    out[o] = fmt << 6;
    out[o + 1] = csid - 64;
    return o + 2;
  }
  out[o] = (fmt << 6) | 1;
  out[o + 1] = (csid - 64) & 0xff;
  out[o + 2] = (csid - 64) >> 8;
  return o + 3;
}

function writeU24(out: Uint8Array, o: number, v: number): void {
  out[o] = (v >> 16) & 0xff;
  out[o + 1] = (v >> 8) & 0xff;
  out[o + 2] = v & 0xff;
}
