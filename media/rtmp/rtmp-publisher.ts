/**
 * A small RTMP publisher (the encoder side) for tests and benchmarks. It
 * speaks like ffmpeg: handshake, Set Chunk Size, connect, releaseStream,
 * FCPublish, createStream, publish, then media, then FCUnpublish and
 * deleteStream. Sending respects socket backpressure, so 'fast' pacing runs
 * at whatever rate the server reads without growing memory.
 */
import type { Socket } from "bun";
import { encodeAmf0, decodeAmf0, type Amf0Object, type Amf0Value } from "./amf0.ts";
import { ByteQueue } from "./byte-queue.ts";
import { RtmpConnectionClosedError, RtmpError, RtmpProtocolError, RtmpPublishRejectedError, RtmpTimeoutError } from "./errors.ts";
import { ClientHandshake } from "./handshake.ts";
import { MessageChannel } from "./message-channel.ts";
import { ChunkStreamId, MessageType, type RtmpMessage } from "./message-types.ts";
import type { MediaMessage } from "./publish-handlers.ts";
import { parseRtmpUrl, type PublisherUrlForm } from "./rtmp-url.ts";
import { SocketWriter } from "./socket-writer.ts";

export interface PublishOptions {
  /** rtmp://host[:port]/app/streamKey[?query] */
  url: string;
  /** How the URL is split into app / publishing name (see rtmp-url.ts). Default 'ffmpeg'. */
  form?: PublisherUrlForm;
  /** FLV-tag-shaped messages; 'data' payloads starting with "onMetaData" get the @setDataFrame wrapper. */
  tags: AsyncIterable<MediaMessage> | Iterable<MediaMessage>;
  /** 'realtime' sends each tag at its timestamp (like ffmpeg -re); 'fast' (default) as fast as the socket drains. */
  pace?: "realtime" | "fast";
  /** Outgoing chunk size. Default 4096. */
  chunkSize?: number;
  /** Limit for connecting and for each server answer. Default 10000 ms. */
  timeoutMs?: number;
  /** Unpublish when `tags` ends (default true); false keeps the connection open until close()/abort(). */
  unpublishAtEnd?: boolean;
}

export interface PublishStarted {
  /** "NetStream.Publish.Start" */
  code: string;
  description: string;
  streamId: number;
}

export interface PublishSummary {
  /** completed: tags ran out and we unpublished; closed: close() was called; aborted: abort() was called. */
  ended: "completed" | "closed" | "aborted";
  tagsSent: number;
  /** Media payload bytes sent (without RTMP framing). */
  payloadBytesSent: number;
}

export interface Publication {
  /** Resolves on NetStream.Publish.Start; rejects with RtmpPublishRejectedError when refused. */
  readonly started: Promise<PublishStarted>;
  /**
   * Resolves when the publish is over by our choice (tags done, close(),
   * abort()); rejects if it was refused or the server dropped us
   * (RtmpConnectionClosedError), e.g. after a kick.
   */
  readonly finished: Promise<PublishSummary>;
  /** Stops after the current tag, unpublishes, closes; resolves like `finished`. */
  close(): Promise<PublishSummary>;
  /** Drops the socket without unpublishing, like a killed encoder. */
  abort(): void;
  readonly tagsSent: number;
}

/** Queue at most this much in userland before waiting for the socket to drain. */
const WRITE_HIGH_WATER = 256 * 1024;
const SET_DATA_FRAME = encodeAmf0("@setDataFrame");
const ON_METADATA = encodeAmf0("onMetaData");
const STOP = Symbol("stop");

type Waiter = { resolve: (message: Amf0Value[]) => void; reject: (error: Error) => void };

export function publish(options: PublishOptions): Publication {
  const target = parseRtmpUrl(options.url, options.form ?? "ffmpeg");
  const timeoutMs = options.timeoutMs ?? 10_000;
  const queue = new ByteQueue();
  const handshake = new ClientHandshake();
  let socket: Socket<undefined> | null = null;
  let writer: SocketWriter | null = null;
  let channel: MessageChannel | null = null;
  let handshakeDone: (() => void) | null = null;
  let connectionError: Error | null = null;
  let closeRequested: "closed" | "aborted" | null = null;
  let socketClosed = false;
  const onSocketClosed: Array<() => void> = [];
  /**
   * close(), abort() and loss of the connection interrupt whatever the sender
   * awaits (a stalled tag source, a realtime sleep). One slot, not a shared
   * promise raced per tag: racing a long-lived promise leaks a reaction per call.
   */
  let stopped = false;
  let interrupt: (() => void) | null = null;
  function signalStop(): void {
    stopped = true;
    interrupt?.();
  }
  function untilStopped<T>(value: Promise<T> | T): Promise<T | typeof STOP> {
    if (stopped) return Promise.resolve(STOP);
    return new Promise<T | typeof STOP>((resolve, reject) => {
      interrupt = () => resolve(STOP);
      Promise.resolve(value).then(resolve, reject);
    }).finally(() => (interrupt = null));
  }
  const transactions = new Map<number, Waiter>();
  let statusWaiter: Waiter | null = null;
  let tagsSent = 0;
  let payloadBytesSent = 0;

  let resolveStarted!: (value: PublishStarted) => void;
  let rejectStarted!: (error: Error) => void;
  const started = new Promise<PublishStarted>((resolve, reject) => {
    resolveStarted = resolve;
    rejectStarted = reject;
  });
  // Callers often await only one of the two promises; the other must not crash the process.
  started.catch(() => {});

  function failAll(error: Error): void {
    connectionError ??= error;
    for (const waiter of transactions.values()) waiter.reject(error);
    transactions.clear();
    statusWaiter?.reject(error);
    statusWaiter = null;
  }

  function handleMessage(message: RtmpMessage): void {
    if (message.typeId !== MessageType.commandAmf0) return; // media/data from a server: none expected
    const values = decodeAmf0(message.payload);
    const [name, txn] = values;
    if ((name === "_result" || name === "_error") && typeof txn === "number") {
      const waiter = transactions.get(txn);
      transactions.delete(txn);
      waiter?.resolve(values);
    } else if (name === "onStatus") {
      const waiter = statusWaiter;
      statusWaiter = null;
      waiter?.resolve(values);
    }
  }

  function onData(bytes: Uint8Array): void {
    queue.push(bytes);
    try {
      if (!handshake.done) {
        const step = handshake.advance(queue);
        if (!step.done) return;
        writer!.write(step.reply!);
        handshakeDone?.();
      }
      channel!.noteReceived(bytes.length);
      for (let message = channel!.next(); message; message = channel!.next()) handleMessage(message);
    } catch (error) {
      failAll(error instanceof Error ? error : new RtmpProtocolError(String(error)));
      socket?.terminate();
    }
  }

  function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
    let timer: Timer;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RtmpTimeoutError(`no answer to ${what} within ${timeoutMs} ms`)), timeoutMs);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  function call(txn: number, values: Amf0Value[], streamId = 0): Promise<Amf0Value[]> {
    if (connectionError) return Promise.reject(connectionError);
    const answer = new Promise<Amf0Value[]>((resolve, reject) => transactions.set(txn, { resolve, reject }));
    channel!.sendAmf0Command(streamId === 0 ? ChunkStreamId.command : ChunkStreamId.streamCommand, streamId, values);
    return withTimeout(answer, String(values[0]));
  }

  function nextStatus(): Promise<Amf0Value[]> {
    if (connectionError) return Promise.reject(connectionError);
    return withTimeout(new Promise<Amf0Value[]>((resolve, reject) => (statusWaiter = { resolve, reject })), "publish");
  }

  async function connectSocket(): Promise<void> {
    const handshaken = new Promise<void>((resolve, reject) => {
      handshakeDone = resolve;
      onSocketClosed.push(() => reject(connectionError ?? new RtmpConnectionClosedError("connection closed during the handshake")));
    });
    socket = await withTimeout(
      Bun.connect({
        hostname: target.hostname,
        port: target.port,
        socket: {
          binaryType: "uint8array",
          data: (_s, bytes) => onData(bytes),
          drain: () => writer?.flush(),
          close: () => {
            socketClosed = true;
            writer?.markClosed();
            failAll(connectionError ?? new RtmpConnectionClosedError("server closed the connection"));
            signalStop();
            for (const fn of onSocketClosed.splice(0)) fn();
          },
          error: (_s, error) => failAll(error),
        },
      }),
      "TCP connect",
    );
    writer = new SocketWriter(socket);
    channel = new MessageChannel(queue, (bytes) => writer!.write(bytes), { maxMessageBytes: 1 << 20, maxChunkStreams: 16 });
    writer.write(handshake.start());
    await withTimeout(handshaken, "handshake");
  }

  async function run(): Promise<PublishSummary> {
    await connectSocket();
    const ch = channel!;
    ch.setOutgoingChunkSize(options.chunkSize ?? 4096);
    const connectAnswer = await call(1, ["connect", 1, { app: target.app, type: "nonprivate", flashVer: "FMLE/3.0 (compatible; vidlive-publisher)", tcUrl: target.tcUrl }]);
    expectResult(connectAnswer, "connect");
    ch.sendAmf0Command(ChunkStreamId.command, 0, ["releaseStream", 2, null, target.name]);
    ch.sendAmf0Command(ChunkStreamId.command, 0, ["FCPublish", 3, null, target.name]);
    const created = await call(4, ["createStream", 4, null]);
    expectResult(created, "createStream");
    const streamId = typeof created[3] === "number" ? created[3] : 1;
    const statusPromise = nextStatus();
    ch.sendAmf0Command(ChunkStreamId.streamCommand, streamId, ["publish", 5, null, target.name, "live"]);
    const info = statusInfo(await statusPromise);
    if (info.level === "error" || info.code !== "NetStream.Publish.Start") {
      throw new RtmpPublishRejectedError(info.code, info.description);
    }
    resolveStarted({ code: info.code, description: info.description, streamId });

    let firstTimestamp: number | null = null;
    const startedAt = performance.now();
    const iterator = iterate(options.tags);
    try {
      for (;;) {
        // Race the source against close()/abort()/server close, so a stalled source cannot hang us.
        const next = await untilStopped(iterator.next());
        if (next === STOP || next.done) break;
        const tag = next.value;
        if (options.pace === "realtime") {
          firstTimestamp ??= tag.timestamp;
          const wait = startedAt + (tag.timestamp - firstTimestamp) - performance.now();
          if (wait > 1 && (await untilStopped(Bun.sleep(wait))) === STOP) break;
        }
        if (closeRequested || connectionError) break;
        ch.sendMessage(toRtmpMessage(tag, streamId));
        tagsSent++;
        payloadBytesSent += tag.payload.length;
        if (writer!.pendingBytes > WRITE_HIGH_WATER) await writer!.whenDrained();
      }
    } finally {
      // Not awaited: an async generator stuck in an await would hold return() back too.
      void Promise.resolve(iterator.return?.()).catch(() => {});
    }
    if (options.unpublishAtEnd === false) await untilStopped(new Promise<never>(() => {}));
    if (closeRequested === "aborted") return { ended: "aborted", tagsSent, payloadBytesSent };
    if (connectionError) throw connectionError;
    ch.sendAmf0Command(ChunkStreamId.command, 0, ["FCUnpublish", 6, null, target.name]);
    ch.sendAmf0Command(ChunkStreamId.streamCommand, streamId, ["deleteStream", 7, null, streamId]);
    await writer!.whenDrained();
    await endSocket();
    return { ended: closeRequested ?? "completed", tagsSent, payloadBytesSent };
  }

  async function endSocket(): Promise<void> {
    if (!socket || socketClosed) return;
    const closed = new Promise<void>((resolve) => onSocketClosed.push(resolve));
    // Half-close and keep reading until the server closes. Bun's end() closes the descriptor at
    // once; our kernel would then answer the server's late acks with RST, and an RST makes the
    // server's kernel discard what the server has not read yet (our unpublish included).
    socket.shutdown();
    // The server closes once it has processed our unpublish; do not hang if it never does.
    await Promise.race([closed, Bun.sleep(timeoutMs)]);
    if (!socketClosed) socket.terminate();
  }

  const finished = run().then(
    (summary) => summary,
    (error: unknown) => {
      const err = error instanceof Error ? error : new RtmpError(String(error));
      if (closeRequested === "aborted") {
        rejectStarted(new RtmpConnectionClosedError("publication aborted"));
        return { ended: "aborted" as const, tagsSent, payloadBytesSent };
      }
      rejectStarted(err);
      socket?.terminate();
      throw err;
    },
  );
  finished.catch(() => {});

  return {
    started,
    finished,
    get tagsSent() {
      return tagsSent;
    },
    close() {
      closeRequested ??= "closed";
      signalStop();
      return finished;
    },
    abort() {
      closeRequested = "aborted";
      signalStop();
      failAll(new RtmpConnectionClosedError("publication aborted"));
      // A killed encoder's kernel closes the socket; unsent userland data is simply lost.
      socket?.end();
    },
  };
}

function iterate<T>(source: AsyncIterable<T> | Iterable<T>): AsyncIterator<T> | Iterator<T> {
  return Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
}

function toRtmpMessage(tag: MediaMessage, streamId: number): RtmpMessage {
  switch (tag.type) {
    case "audio":
      return { chunkStreamId: ChunkStreamId.audio, typeId: MessageType.audio, streamId, timestamp: tag.timestamp, payload: tag.payload };
    case "video":
      return { chunkStreamId: ChunkStreamId.video, typeId: MessageType.video, streamId, timestamp: tag.timestamp, payload: tag.payload };
    case "data": {
      // ffmpeg and OBS send metadata as @setDataFrame("onMetaData", ...); mirror them.
      const payload = startsWith(tag.payload, ON_METADATA) ? concat(SET_DATA_FRAME, tag.payload) : tag.payload;
      return { chunkStreamId: ChunkStreamId.streamCommand, typeId: MessageType.dataAmf0, streamId, timestamp: tag.timestamp, payload };
    }
  }
}

function expectResult(values: Amf0Value[], what: string): void {
  if (values[0] === "_result") return;
  const info = statusInfo(values);
  throw new RtmpPublishRejectedError(info.code || `${what} failed`, info.description);
}

function statusInfo(values: Amf0Value[]): { level: string; code: string; description: string } {
  const info = values[3];
  const object = (typeof info === "object" && info !== null && !Array.isArray(info) ? info : {}) as Amf0Object;
  const text = (v: Amf0Value) => (typeof v === "string" ? v : "");
  return { level: text(object.level), code: text(object.code), description: text(object.description) };
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
