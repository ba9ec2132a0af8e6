/**
 * One server-side RTMP connection: handshake, then messages in arrival order
 * (commands go to SessionCommands: connect → createStream → publish →
 * unpublish), media to the sink, and a single end. Socket-agnostic (see
 * SessionIo) so the server owns sockets and timers and this file owns
 * protocol and ordering.
 *
 * Ordering guarantee: bytes are processed strictly in arrival order, one
 * message at a time. When authorize or a sink returns a pending promise,
 * processing stops until it settles; incoming bytes are buffered up to
 * `readHighWaterBytes`, then the socket is paused. That is the whole
 * backpressure story: memory per connection stays bounded by the high-water
 * mark plus one socket read plus one incomplete message.
 */
import { decodeAmf0 } from "./amf0.ts";
import { splitAggregate } from "./aggregate-message.ts";
import type { BitrateMeter } from "./bitrate-meter.ts";
import { ByteQueue } from "./byte-queue.ts";
import { interpretDataMessage } from "./data-message.ts";
import { Amf0DecodeError, RtmpError, RtmpProtocolError } from "./errors.ts";
import { ServerHandshake } from "./handshake.ts";
import { MessageChannel } from "./message-channel.ts";
import { MessageType, type RtmpMessage } from "./message-types.ts";
import type { CloseReason, MediaMessageType, MediaSink, PublishHandlers, PublishRequest, RtmpLogger } from "./publish-handlers.ts";
import { type CommandHost, type CommandOptions, SessionCommands } from "./session-commands.ts";

/** What the session needs from its socket. */
export interface SessionIo {
  write(bytes: Uint8Array): void;
  pause(): void;
  resume(): void;
  /** graceful: flush what is queued, then FIN. Otherwise drop the connection now. */
  close(graceful: boolean): void;
}

export interface SessionOptions extends CommandOptions {
  maxMessageBytes: number;
  maxChunkStreams: number;
  /** Buffered unprocessed bytes above which the socket is paused while waiting. */
  readHighWaterBytes: number;
}

export interface SessionHooks {
  /**
   * The publish was accepted; the server indexes the session by stream key
   * for kick() and answers the stream's bitrate meter (null: no cap).
   */
  onPublishStarted(session: RtmpSession): BitrateMeter | null;
  /** The session is over (any reason); the server forgets it. */
  onEnded(session: RtmpSession): void;
}

/** "open": handshake done, commands flow (their own phases are SessionCommands'). */
type Phase = "handshake" | "open" | "publishing" | "closed";

export class RtmpSession {
  private phase: Phase = "handshake";
  private readonly queue = new ByteQueue();
  private readonly handshake = new ServerHandshake();
  private readonly channel: MessageChannel;
  private readonly commands: SessionCommands;
  private sink: MediaSink | null = null;
  private sinkClosed = false;
  /** Messages split out of an aggregate, delivered before reading on. */
  private backlog: RtmpMessage[] = [];
  private pumping = false;
  /** The authorize or onMessage promise processing waits for. */
  private waitingOn: Promise<unknown> | null = null;
  private waitingOnSink = false;
  private paused = false;
  /** The socket is gone; finish processing what was received, then end. */
  private peerGone = false;
  private closeReason: CloseReason | null = null;
  private bytesIn = 0;
  private messagesDelivered = 0;
  /** The stream's bitrate cap, counted on every message payload once publishing. */
  private meter: BitrateMeter | null = null;

  constructor(
    readonly id: number,
    readonly remoteAddress: string,
    private readonly io: SessionIo,
    handlers: PublishHandlers,
    private readonly options: SessionOptions,
    private readonly hooks: SessionHooks,
    private readonly log: RtmpLogger,
  ) {
    this.channel = new MessageChannel(this.queue, (bytes) => this.io.write(bytes), {
      maxMessageBytes: options.maxMessageBytes,
      maxChunkStreams: options.maxChunkStreams,
    });
    const host: CommandHost = {
      id,
      remoteAddress,
      isClosed: () => this.phase === "closed",
      startPublishing: (sink) => this.startPublishing(sink),
      end: (reason, graceful) => this.end(reason, graceful),
    };
    this.commands = new SessionCommands(host, this.channel, handlers, options, log);
  }

  get handshakeDone(): boolean {
    return this.handshake.done;
  }

  get closed(): boolean {
    return this.phase === "closed";
  }

  /** True while a sink holds processing back: silence on the socket is then our doing, not the peer's. */
  get backpressured(): boolean {
    return this.waitingOnSink;
  }

  /** The accepted publish (NetStream.Publish.Start is sent along with it). */
  get publishing(): PublishRequest | null {
    return this.phase === "publishing" ? this.commands.request : null;
  }

  stats(): { bytesIn: number; bufferedBytes: number; messagesDelivered: number; paused: boolean } {
    return {
      bytesIn: this.bytesIn,
      bufferedBytes: this.queue.length + this.channel.partialBytes,
      messagesDelivered: this.messagesDelivered,
      paused: this.paused,
    };
  }

  /** Bytes from the socket. Never throws: failures close this connection. */
  receive(bytes: Uint8Array): void {
    if (this.phase === "closed") return;
    this.bytesIn += bytes.length;
    this.queue.push(bytes);
    try {
      if (this.handshake.done) this.channel.noteReceived(bytes.length);
    } catch (error) {
      return this.fail(error);
    }
    if (this.waitingOn) {
      if (!this.paused && this.queue.length >= this.options.readHighWaterBytes) {
        this.paused = true;
        this.io.pause();
      }
      return;
    }
    this.pump();
  }

  /**
   * The socket closed. What the peer sent before closing is still processed:
   * ffmpeg sends FCUnpublish + deleteStream and closes at once, and with a
   * slow sink those commands may still sit in our buffer. Only when the
   * buffer is exhausted without an unpublish is it a 'disconnect'.
   */
  socketClosed(): void {
    if (this.phase === "closed") return;
    this.peerGone = true;
    this.pump();
  }

  /** Server-initiated end: kick, timeout, shutdown. `graceful` lets queued replies flush first. */
  terminate(reason: CloseReason, graceful = true): void {
    this.end(reason, graceful);
  }

  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.phase !== "closed" && !this.waitingOn) {
        if (!this.handshake.done) {
          const step = this.handshake.advance(this.queue);
          if (step.reply) this.io.write(step.reply);
          if (!step.done) break;
          this.phase = "open";
          this.log({ event: "rtmp.handshake", connection: this.id });
          // Bytes that arrived together with C2 were not counted for acks yet.
          this.channel.noteReceived(this.queue.length);
          continue;
        }
        const message = this.backlog.shift() ?? this.channel.next();
        if (!message) break;
        const pending = this.handleMessage(message);
        if (pending) this.waitFor(pending, message.typeId !== MessageType.commandAmf0 && message.typeId !== MessageType.commandAmf3);
      }
      if (this.peerGone && !this.waitingOn) this.end("disconnect", false);
    } catch (error) {
      this.fail(error);
    } finally {
      this.pumping = false;
    }
  }

  private waitFor(promise: Promise<unknown>, isSink: boolean): void {
    this.waitingOn = promise;
    this.waitingOnSink = isSink;
    promise.then(
      () => {
        if (this.waitingOn !== promise) return;
        this.waitingOn = null;
        this.waitingOnSink = false;
        if (this.phase === "closed") return;
        if (this.paused) {
          this.paused = false;
          this.io.resume();
        }
        this.pump();
      },
      (error: unknown) => {
        if (this.waitingOn !== promise) return;
        this.waitingOn = null;
        this.waitingOnSink = false;
        this.fail(error);
      },
    );
  }

  /** Returns a promise when processing must wait for it. */
  private handleMessage(message: RtmpMessage): Promise<unknown> | void {
    // An aggregate's parts come back through here one by one: count those, not the wrapper.
    if (this.meter && this.phase === "publishing" && message.typeId !== MessageType.aggregate) {
      const now = performance.now();
      if (!this.meter.add(message.payload.length, now)) return this.commands.refuseOverBitrate(this.meter, now);
    }
    switch (message.typeId) {
      case MessageType.audio:
        return this.deliver("audio", message.timestamp, message.payload);
      case MessageType.video:
        return this.deliver("video", message.timestamp, message.payload);
      case MessageType.dataAmf0:
        return this.handleData(message.timestamp, message.payload);
      case MessageType.dataAmf3:
        // AMF3-era clients prefix AMF0 data with a 0 format byte.
        return this.handleData(message.timestamp, stripAmf3Prefix(message.payload));
      case MessageType.commandAmf0:
        return this.commands.handle(message, decodeAmf0(message.payload));
      case MessageType.commandAmf3:
        return this.commands.handle(message, decodeAmf0(stripAmf3Prefix(message.payload)));
      case MessageType.aggregate:
        this.requirePublishing("aggregate");
        for (const part of splitAggregate(message.payload, message.timestamp)) {
          this.backlog.push({ ...message, typeId: part.typeId, timestamp: part.timestamp, payload: part.payload });
        }
        return;
      case MessageType.sharedObjectAmf0:
      case MessageType.sharedObjectAmf3:
        // Legal RTMP, meaningless for a publisher; not worth closing over.
        this.log({ event: "rtmp.ignored", connection: this.id, typeId: message.typeId });
        return;
      default:
        throw new RtmpProtocolError(`unknown message type ${message.typeId}`);
    }
  }

  private requirePublishing(what: string): void {
    if (this.phase !== "publishing") throw new RtmpProtocolError(`${what} message before an accepted publish`);
  }

  private deliver(type: MediaMessageType, timestamp: number, payload: Uint8Array): Promise<unknown> | void {
    this.requirePublishing(type);
    this.messagesDelivered++;
    const result = this.sink!.onMessage({ type, timestamp, payload });
    // Only a real promise is waited for; a sync sink keeps the fast path.
    if (result && typeof (result as Promise<void>).then === "function") return result;
  }

  private handleData(timestamp: number, body: Uint8Array): Promise<unknown> | void {
    const action = interpretDataMessage(body);
    if (action.kind === "ignore") return;
    if (this.phase !== "publishing") {
      // Metadata before the publish is accepted has no sink to go to; harmless, so not an error.
      this.log({ event: "rtmp.ignored", connection: this.id, reason: "data before publish" });
      return;
    }
    return this.deliver("data", timestamp, action.payload);
  }

  /** authorize said yes (see CommandHost.startPublishing). */
  private startPublishing(sink: MediaSink): boolean {
    if (this.phase === "closed") {
      // The encoder left while we were deciding: the service still has to hear about it.
      safeOnClose(sink, this.closeReason ?? "disconnect", this.log);
      return false;
    }
    this.sink = sink;
    this.phase = "publishing";
    this.meter = this.hooks.onPublishStarted(this);
    return true;
  }

  private fail(error: unknown): void {
    if (this.phase === "closed") return;
    const isPeerFault = error instanceof RtmpError;
    this.log({
      event: isPeerFault ? "rtmp.protocol.error" : "rtmp.sink.error",
      connection: this.id,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    });
    this.end("error", false);
  }

  /** Single exit: idempotent, notifies the sink once (after any pending onMessage). */
  private end(reason: CloseReason, graceful: boolean): void {
    if (this.phase === "closed") return;
    const wasPublishing = this.phase === "publishing";
    this.phase = "closed";
    this.closeReason = reason;
    this.queue.clear();
    this.backlog = [];
    if (wasPublishing && this.sink && !this.sinkClosed) {
      this.sinkClosed = true;
      const sink = this.sink;
      const notify = () => safeOnClose(sink, reason, this.log);
      if (this.waitingOn && this.waitingOnSink) this.waitingOn.then(notify, notify);
      else notify();
    }
    this.log({ ...this.commands.logTags, event: "rtmp.close", connection: this.id, reason, wasPublishing, bytesIn: this.bytesIn });
    this.hooks.onEnded(this);
    this.io.close(graceful);
  }
}

function safeOnClose(sink: MediaSink, reason: CloseReason, log: RtmpLogger): void {
  try {
    sink.onClose(reason);
  } catch (error) {
    log({ event: "rtmp.sink.error", phase: "onClose", error: String(error) });
  }
}

function stripAmf3Prefix(payload: Uint8Array): Uint8Array {
  if (payload[0] !== 0) throw new Amf0DecodeError("AMF3 message without the AMF0 switch byte");
  return payload.subarray(1);
}
