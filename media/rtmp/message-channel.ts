/**
 * The message layer both ends share once the handshake is done: reassembles
 * incoming chunks, answers protocol control traffic (chunk size, abort,
 * acknowledgement windows, pings) and chunks outgoing messages. Everything
 * else (commands, media) is handed to the caller, one message at a time, so
 * the caller decides when to read on (that is where backpressure lives).
 */
import { encodeAmf0, type Amf0Value } from "./amf0.ts";
import type { ByteQueue } from "./byte-queue.ts";
import { ChunkReader, type ChunkReaderLimits } from "./chunk-reader.ts";
import { ChunkWriter } from "./chunk-writer.ts";
import { acknowledgementMessage, pingResponseMessage, readU32Body, setChunkSizeMessage, windowAckSizeMessage } from "./control-messages.ts";
import { RtmpProtocolError } from "./errors.ts";
import { MessageType, UserControlEvent, type RtmpMessage } from "./message-types.ts";

export class MessageChannel {
  private readonly reader: ChunkReader;
  private readonly writer = new ChunkWriter();
  /** Total bytes received, for Acknowledgement sequence numbers (spec 5.4.3). */
  private bytesReceived = 0;
  private lastAcked = 0;
  /** Peer's Window Acknowledgement Size: ack each time this many bytes arrived. 0 = peer asked for none. */
  private peerAckWindow = 0;
  /** The window we last announced, so Set Peer Bandwidth only triggers an answer on change. */
  private announcedAckWindow = 0;

  constructor(
    private readonly queue: ByteQueue,
    private readonly send: (bytes: Uint8Array) => void,
    limits: ChunkReaderLimits,
  ) {
    this.reader = new ChunkReader(limits);
  }

  /** Bytes held in incomplete messages. */
  get partialBytes(): number {
    return this.reader.bufferedBytes;
  }

  /** Counts bytes as they come off the socket (acks report receipt, not processing). */
  noteReceived(count: number): void {
    this.bytesReceived += count;
    if (this.peerAckWindow > 0 && this.bytesReceived - this.lastAcked >= this.peerAckWindow) {
      this.lastAcked = this.bytesReceived;
      this.sendMessage(acknowledgementMessage(this.bytesReceived % 2 ** 32));
    }
  }

  /** Next message the caller must handle, or null when more bytes are needed. */
  next(): RtmpMessage | null {
    for (;;) {
      const message = this.reader.read(this.queue);
      if (!message) return null;
      if (!this.handleControl(message)) return message;
    }
  }

  sendMessage(message: RtmpMessage): void {
    this.send(this.writer.encode(message));
  }

  sendAmf0Command(chunkStreamId: number, streamId: number, values: Amf0Value[]): void {
    this.sendMessage({ chunkStreamId, typeId: MessageType.commandAmf0, streamId, timestamp: 0, payload: encodeAmf0(...values) });
  }

  setOutgoingChunkSize(size: number): void {
    this.sendMessage(setChunkSizeMessage(size));
    this.writer.setChunkSize(size);
  }

  announceAckWindow(size: number): void {
    this.announcedAckWindow = size;
    this.sendMessage(windowAckSizeMessage(size));
  }

  /** Returns true when the message was protocol control and is fully handled here. */
  private handleControl(message: RtmpMessage): boolean {
    const { typeId, payload } = message;
    switch (typeId) {
      case MessageType.setChunkSize: {
        const size = readU32Body(payload);
        if (size === null) throw new RtmpProtocolError("short Set Chunk Size message");
        this.reader.setChunkSize(size);
        return true;
      }
      case MessageType.abort: {
        const csid = readU32Body(payload);
        if (csid === null) throw new RtmpProtocolError("short Abort message");
        this.reader.abort(csid);
        return true;
      }
      case MessageType.acknowledgement:
        // We never send enough to need the peer's acks for flow control.
        return true;
      case MessageType.windowAckSize: {
        const size = readU32Body(payload);
        if (size === null) throw new RtmpProtocolError("short Window Acknowledgement Size message");
        this.peerAckWindow = size;
        return true;
      }
      case MessageType.setPeerBandwidth: {
        const size = readU32Body(payload);
        if (size === null) throw new RtmpProtocolError("short Set Peer Bandwidth message");
        // Spec 5.4.5: answer with a Window Acknowledgement Size if it differs from the last one we sent.
        if (size !== this.announcedAckWindow) this.announceAckWindow(size);
        return true;
      }
      case MessageType.userControl: {
        if (payload.length < 2) throw new RtmpProtocolError("short User Control message");
        const event = (payload[0]! << 8) | payload[1]!;
        if (event === UserControlEvent.pingRequest) {
          const timestamp = readU32Body(payload, 2);
          if (timestamp === null) throw new RtmpProtocolError("short Ping Request");
          this.sendMessage(pingResponseMessage(timestamp));
        }
        // Stream Begin/EOF/Dry, buffer length, ping responses: informational for a publish-only peer.
        return true;
      }
      default:
        return false;
    }
  }
}
