/**
 * Reassembles RTMP messages from the chunk stream (spec section 5.3).
 *
 * A chunk is consumed only once its header and body are both buffered, so the
 * reader never holds half-parsed header state and a read can stop anywhere.
 * Per chunk stream it remembers the last header, because fmt 1-3 headers only
 * carry what changed.
 */
import type { ByteQueue } from "./byte-queue.ts";
import { RtmpMessageTooLargeError, RtmpProtocolError } from "./errors.ts";
import type { RtmpMessage } from "./message-types.ts";

export interface ChunkReaderLimits {
  /** Largest message length a header may announce. */
  maxMessageBytes: number;
  /** Distinct chunk stream ids a peer may use (each costs a state record). */
  maxChunkStreams: number;
}

interface ChunkStreamState {
  typeId: number;
  streamId: number;
  length: number;
  /** Absolute timestamp of the last message started on this chunk stream. */
  timestamp: number;
  /**
   * The last timestamp field sent (absolute after fmt 0, delta after fmt 1/2).
   * A fmt 3 header that starts a new message adds it again; this is what
   * ffmpeg, librtmp-derived encoders and SRS do.
   */
  timestampField: number;
  /** The last fmt 0-2 header used the 4-byte extended timestamp. */
  extended: boolean;
  pieces: Uint8Array[];
  received: number;
}

const MESSAGE_HEADER_SIZE = [11, 7, 3, 0] as const;
/** 3 (basic header) + 11 (fmt 0) + 4 (extended timestamp). */
const MAX_HEADER_SIZE = 18;
/** Message lengths are 24-bit, so a chunk never needs to be larger. */
const MAX_EFFECTIVE_CHUNK_SIZE = 0xffffff;

export class ChunkReader {
  private chunkSize = 128;
  private readonly streams = new Map<number, ChunkStreamState>();
  /** Bytes held in partially received messages across all chunk streams. */
  private partialBytes = 0;

  constructor(private readonly limits: ChunkReaderLimits) {}

  /** Bytes of incomplete messages currently held (for memory accounting). */
  get bufferedBytes(): number {
    return this.partialBytes;
  }

  /** Applies the peer's Set Chunk Size. */
  setChunkSize(size: number): void {
    // The spec's valid range is 1..2^31-1 (the top bit must be zero).
    if (!Number.isInteger(size) || size < 1 || size > 0x7fffffff) {
      throw new RtmpProtocolError(`invalid chunk size ${size}`);
    }
    this.chunkSize = Math.min(size, MAX_EFFECTIVE_CHUNK_SIZE);
  }

  /** Abort message: drop the partial message of one chunk stream. */
  abort(chunkStreamId: number): void {
    const state = this.streams.get(chunkStreamId);
    if (state) this.dropPartial(state);
  }

  /**
   * Consumes whole chunks from `queue` until one message completes (returned)
   * or the queue runs short (null; call again after more bytes arrive).
   */
  read(queue: ByteQueue): RtmpMessage | null {
    for (;;) {
      const available = queue.length;
      if (available === 0) return null;
      const head = queue.peekBytes(MAX_HEADER_SIZE);
      const fmt = head[0]! >> 6;
      let chunkStreamId = head[0]! & 0x3f;
      let p = 1;
      if (chunkStreamId === 0) {
        if (available < 2) return null;
        chunkStreamId = 64 + head[1]!;
        p = 2;
      } else if (chunkStreamId === 1) {
        if (available < 3) return null;
        chunkStreamId = 64 + head[1]! + head[2]! * 256;
        p = 3;
      }
      const fieldsSize = MESSAGE_HEADER_SIZE[fmt as 0 | 1 | 2 | 3];
      if (available < p + fieldsSize) return null;

      let state = this.streams.get(chunkStreamId);
      if (!state && fmt >= 2) {
        // fmt 2/3 reuse a length we never saw: nothing sane to do with the bytes.
        throw new RtmpProtocolError(`chunk stream ${chunkStreamId} starts with a fmt ${fmt} header`);
      }

      let timestampField = 0;
      let length = state?.length ?? 0;
      let typeId = state?.typeId ?? 0;
      let streamId = state?.streamId ?? 0;
      if (fmt <= 2) timestampField = u24(head, p);
      if (fmt <= 1) {
        length = u24(head, p + 3);
        typeId = head[p + 6]!;
      }
      if (fmt === 0) streamId = u32le(head, p + 7);
      p += fieldsSize;

      const continuing = fmt === 3 && state !== undefined && state.received > 0;
      const extended = fmt <= 2 ? timestampField === 0xffffff : state!.extended;
      if (extended) {
        if (available < p + 4) return null;
        const value = u32be(head, p);
        if (continuing) {
          // Continuation chunks should repeat the extended timestamp, but some
          // encoders omit it; only consume the 4 bytes when they match.
          if (value === state!.timestampField) p += 4;
        } else {
          timestampField = value;
          p += 4;
        }
      } else if (fmt === 3) {
        timestampField = state!.timestampField;
      }

      const remaining = continuing ? state!.length - state!.received : length;
      if (!continuing && length > this.limits.maxMessageBytes) {
        throw new RtmpMessageTooLargeError(length, this.limits.maxMessageBytes);
      }
      const bodySize = Math.min(this.chunkSize, remaining);
      if (available < p + bodySize) return null;

      // Commit: from here on the chunk is consumed.
      if (!state) {
        if (this.streams.size >= this.limits.maxChunkStreams) {
          throw new RtmpProtocolError(`more than ${this.limits.maxChunkStreams} chunk streams`);
        }
        state = { typeId, streamId, length, timestamp: 0, timestampField: 0, extended: false, pieces: [], received: 0 };
        this.streams.set(chunkStreamId, state);
      }
      queue.skip(p);
      if (!continuing) {
        // A new header while a message is incomplete abandons that message (lenient, like nginx-rtmp).
        if (state.received > 0) this.dropPartial(state);
        state.timestamp = fmt === 0 ? timestampField : (state.timestamp + timestampField) >>> 0;
        state.timestampField = timestampField;
        if (fmt <= 2) state.extended = extended;
        state.length = length;
        state.typeId = typeId;
        state.streamId = streamId;
      }
      if (bodySize > 0) {
        state.pieces.push(queue.take(bodySize));
        state.received += bodySize;
        this.partialBytes += bodySize;
        // Interleaved messages can each be up to the limit; allow a little more than one.
        if (this.partialBytes > this.limits.maxMessageBytes * 2) {
          throw new RtmpProtocolError(`${this.partialBytes} bytes of incomplete messages buffered`);
        }
      }
      if (state.received === state.length) {
        const payload = state.pieces.length === 1 ? state.pieces[0]! : concat(state.pieces, state.length);
        this.dropPartial(state);
        return { chunkStreamId, typeId: state.typeId, streamId: state.streamId, timestamp: state.timestamp, payload };
      }
    }
  }

  private dropPartial(state: ChunkStreamState): void {
    this.partialBytes -= state.received;
    state.pieces = [];
    state.received = 0;
  }
}

function concat(pieces: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let offset = 0;
  for (const piece of pieces) {
    out.set(piece, offset);
    offset += piece.length;
  }
  return out;
}

function u24(b: Uint8Array, o: number): number {
  return (b[o]! << 16) | (b[o + 1]! << 8) | b[o + 2]!;
}
function u32be(b: Uint8Array, o: number): number {
  return ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
}
function u32le(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}
