/**
 * Aggregate messages (type 22) pack several FLV-tag-shaped sub-messages. Some
 * servers relay with them; encoders rarely send them, but accepting them is
 * cheap and their parsing must be strict because the lengths come from the peer.
 */
import { RtmpProtocolError } from "./errors.ts";
import { MessageType } from "./message-types.ts";

export interface AggregatePart {
  typeId: number;
  /** Absolute timestamp: the aggregate's timestamp plus the part's offset from the first part. */
  timestamp: number;
  payload: Uint8Array;
}

const TAG_HEADER = 11;
const BACK_POINTER = 4;

export function splitAggregate(payload: Uint8Array, aggregateTimestamp: number): AggregatePart[] {
  const parts: AggregatePart[] = [];
  let firstTimestamp: number | null = null;
  let o = 0;
  while (o < payload.length) {
    if (o + TAG_HEADER > payload.length) throw new RtmpProtocolError("truncated aggregate sub-message header");
    const typeId = payload[o]!;
    const size = (payload[o + 1]! << 16) | (payload[o + 2]! << 8) | payload[o + 3]!;
    const timestamp = ((payload[o + 4]! << 16) | (payload[o + 5]! << 8) | payload[o + 6]! | (payload[o + 7]! << 24)) >>> 0;
    const start = o + TAG_HEADER;
    const end = start + size;
    if (end > payload.length) throw new RtmpProtocolError("aggregate sub-message overruns the aggregate");
    if (typeId !== MessageType.audio && typeId !== MessageType.video && typeId !== MessageType.dataAmf0) {
      throw new RtmpProtocolError(`aggregate carries message type ${typeId}`);
    }
    firstTimestamp ??= timestamp;
    parts.push({ typeId, timestamp: (aggregateTimestamp + (timestamp - firstTimestamp)) >>> 0, payload: payload.slice(start, end) });
    // The trailing back pointer may be missing on the last part.
    o = Math.min(end + BACK_POINTER, payload.length);
  }
  return parts;
}
