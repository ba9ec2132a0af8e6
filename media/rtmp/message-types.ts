/** RTMP message type ids (RTMP 1.0 spec, sections 5.4 and 7.1). */
export const MessageType = {
  setChunkSize: 1,
  abort: 2,
  acknowledgement: 3,
  userControl: 4,
  windowAckSize: 5,
  setPeerBandwidth: 6,
  audio: 8,
  video: 9,
  dataAmf3: 15,
  sharedObjectAmf3: 16,
  commandAmf3: 17,
  dataAmf0: 18,
  sharedObjectAmf0: 19,
  commandAmf0: 20,
  aggregate: 22,
} as const;

/** User control event types (spec 7.1.7). */
export const UserControlEvent = {
  streamBegin: 0,
  streamEof: 1,
  streamDry: 2,
  setBufferLength: 3,
  streamIsRecorded: 4,
  pingRequest: 6,
  pingResponse: 7,
} as const;

/**
 * Chunk stream ids we send on. 2 is reserved by the spec for protocol control;
 * the rest follow ffmpeg's habit so packet captures look familiar.
 */
export const ChunkStreamId = {
  control: 2,
  command: 3,
  audio: 4,
  streamCommand: 5,
  video: 6,
} as const;

/** One complete, reassembled RTMP message. */
export interface RtmpMessage {
  /** Chunk stream it arrived on (or is to be sent on). */
  chunkStreamId: number;
  typeId: number;
  /** Message stream id (0 = the connection itself, >0 = a NetStream). */
  streamId: number;
  /** Milliseconds, unsigned 32-bit, wraps. */
  timestamp: number;
  payload: Uint8Array;
}
