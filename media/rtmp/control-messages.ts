/**
 * Encoders for protocol control and user control message bodies. Each returns
 * a complete RtmpMessage on chunk stream 2 / message stream 0, as the spec
 * requires for control traffic.
 */
import { ChunkStreamId, MessageType, UserControlEvent, type RtmpMessage } from "./message-types.ts";

function control(typeId: number, payload: Uint8Array): RtmpMessage {
  return { chunkStreamId: ChunkStreamId.control, typeId, streamId: 0, timestamp: 0, payload };
}

function u32(value: number, extra = 0): Uint8Array {
  const out = new Uint8Array(4 + extra);
  new DataView(out.buffer).setUint32(0, value >>> 0);
  return out;
}

export function setChunkSizeMessage(size: number): RtmpMessage {
  return control(MessageType.setChunkSize, u32(size & 0x7fffffff));
}

export function acknowledgementMessage(sequenceNumber: number): RtmpMessage {
  return control(MessageType.acknowledgement, u32(sequenceNumber));
}

export function windowAckSizeMessage(size: number): RtmpMessage {
  return control(MessageType.windowAckSize, u32(size));
}

/** limitType: 0 hard, 1 soft, 2 dynamic. */
export function setPeerBandwidthMessage(size: number, limitType: 0 | 1 | 2): RtmpMessage {
  const body = u32(size, 1);
  body[4] = limitType;
  return control(MessageType.setPeerBandwidth, body);
}

function userControl(event: number, value: number): RtmpMessage {
  const body = new Uint8Array(6);
  const view = new DataView(body.buffer);
  view.setUint16(0, event);
  view.setUint32(2, value >>> 0);
  return control(MessageType.userControl, body);
}

export function streamBeginMessage(streamId: number): RtmpMessage {
  return userControl(UserControlEvent.streamBegin, streamId);
}

export function pingRequestMessage(timestamp: number): RtmpMessage {
  return userControl(UserControlEvent.pingRequest, timestamp);
}

export function pingResponseMessage(timestamp: number): RtmpMessage {
  return userControl(UserControlEvent.pingResponse, timestamp);
}

/** Reads a big-endian u32 from a control body; null when the body is too short. */
export function readU32Body(payload: Uint8Array, offset = 0): number | null {
  if (payload.length < offset + 4) return null;
  return new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(offset);
}
