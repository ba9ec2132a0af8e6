/**
 * Helpers shared by the RTMP tests: the fixture's tags, a server whose
 * handlers record everything, a recording sink, and a raw TCP client for
 * sending hand-made (or hostile) bytes. Test-only; nothing in production
 * imports this file.
 */
import { expect } from "bun:test";
import { join } from "node:path";
import { readFlvTags } from "../flv/flv-reader.ts";
import { encodeAmf0, type Amf0Value } from "./amf0.ts";
import { ChunkWriter } from "./chunk-writer.ts";
import { HANDSHAKE_PACKET_SIZE, RTMP_VERSION } from "./handshake.ts";
import { ChunkStreamId, MessageType, type RtmpMessage } from "./message-types.ts";
import type { AuthorizeResult, CloseReason, MediaMessage, MediaSink, PublishRequest } from "./publish-handlers.ts";
import { createRtmpServer, type RtmpServer, type RtmpServerOptions } from "./rtmp-server.ts";

export const FIXTURE_PATH = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");

/** The fixture's tags (payloads are views into the file bytes). */
export async function fixtureTags(): Promise<MediaMessage[]> {
  const bytes = new Uint8Array(await Bun.file(FIXTURE_PATH).arrayBuffer());
  return [...readFlvTags(bytes)];
}

export function countByType(messages: Iterable<{ type: string }>): { audio: number; video: number; data: number } {
  const counts = { audio: 0, video: 0, data: 0 };
  for (const m of messages) counts[m.type as keyof typeof counts]++;
  return counts;
}

export class RecordingSink implements MediaSink {
  readonly messages: MediaMessage[] = [];
  closeReason: CloseReason | null = null;
  closeCalls = 0;
  /** Set to make onMessage slow (backpressure tests). */
  delay: ((message: MediaMessage) => Promise<void> | void) | null = null;
  readonly closed: Promise<CloseReason>;
  private resolveClosed!: (reason: CloseReason) => void;

  constructor() {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  onMessage(message: MediaMessage): void | Promise<void> {
    this.messages.push(message);
    return this.delay?.(message) ?? undefined;
  }

  onClose(reason: CloseReason): void {
    this.closeCalls++;
    this.closeReason = reason;
    this.resolveClosed(reason);
  }
}

export interface TestServer {
  server: RtmpServer;
  requests: PublishRequest[];
  sinks: RecordingSink[];
  /** Latest accepted sink per stream key. */
  sinkByKey: Map<string, RecordingSink>;
  logs: Record<string, unknown>[];
  /** Decides each publish; default accepts with a new RecordingSink. */
  decide: (request: PublishRequest, sink: RecordingSink) => Promise<AuthorizeResult> | AuthorizeResult;
  url(key?: string, query?: string): string;
}

export async function startTestServer(options: Partial<RtmpServerOptions> = {}): Promise<TestServer> {
  const state: TestServer = {
    server: null as unknown as RtmpServer,
    requests: [],
    sinks: [],
    sinkByKey: new Map(),
    logs: [],
    decide: (_request, sink) => ({ ok: true, sink }),
    url(key = "KEY123", query = "?sig=abc") {
      return `rtmp://127.0.0.1:${this.server.port}/live/${key}${query}`;
    },
  };
  state.server = await createRtmpServer({
    port: 0,
    hostname: "127.0.0.1",
    logger: (entry) => state.logs.push(entry),
    ...options,
    handlers: {
      async authorize(request) {
        state.requests.push(request);
        const sink = new RecordingSink();
        const result = await state.decide(request, sink);
        if (result.ok) {
          state.sinks.push(sink);
          state.sinkByKey.set(request.streamKey, sink);
        }
        return result;
      },
    },
  });
  return state;
}

export async function waitFor(condition: () => boolean, timeoutMs = 5000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(5);
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, Bun.sleep(ms).then(() => Promise.reject(new Error(`${what} did not settle within ${ms} ms`)))]);
}

/** Tags from `source`, with a pause between each (keeps a publish alive for a while). */
export async function* slowly<T>(source: Iterable<T>, gapMs: number): AsyncGenerator<T> {
  for (const item of source) {
    yield item;
    await Bun.sleep(gapMs);
  }
}

/** A bare TCP client that records what it receives and when the server closed it. */
export class RawClient {
  received = new Uint8Array(0);
  closedAt: number | null = null;
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;
  private readonly writer = new ChunkWriter();
  private constructor(private socket: import("bun").Socket<undefined> | null) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  static async connect(port: number): Promise<RawClient> {
    const client = new RawClient(null);
    client.socket = await Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        binaryType: "uint8array",
        data: (_s, bytes) => {
          const next = new Uint8Array(client.received.length + bytes.length);
          next.set(client.received);
          next.set(bytes, client.received.length);
          client.received = next;
        },
        close: () => {
          client.closedAt = Date.now();
          client.resolveClosed();
        },
        error: () => {},
      },
    });
    return client;
  }

  get isClosed(): boolean {
    return this.closedAt !== null;
  }

  send(bytes: Uint8Array): number {
    return this.socket!.write(bytes);
  }

  /** C0+C1, wait for S0+S1+S2, C2. */
  async handshake(): Promise<{ s1: Uint8Array; s2: Uint8Array; c1: Uint8Array }> {
    const c0c1 = new Uint8Array(1 + HANDSHAKE_PACKET_SIZE);
    c0c1[0] = RTMP_VERSION;
    crypto.getRandomValues(c0c1.subarray(9));
    this.send(c0c1);
    await waitFor(() => this.received.length >= 1 + 2 * HANDSHAKE_PACKET_SIZE, 3000, "S0+S1+S2");
    const s1 = this.received.slice(1, 1 + HANDSHAKE_PACKET_SIZE);
    const s2 = this.received.slice(1 + HANDSHAKE_PACKET_SIZE, 1 + 2 * HANDSHAKE_PACKET_SIZE);
    this.received = this.received.slice(1 + 2 * HANDSHAKE_PACKET_SIZE);
    this.send(s1);
    return { s1, s2, c1: c0c1.subarray(1) };
  }

  sendMessage(message: RtmpMessage): void {
    this.send(this.writer.encode(message));
  }

  command(values: Amf0Value[], streamId = 0): void {
    this.sendMessage({
      chunkStreamId: streamId === 0 ? ChunkStreamId.command : ChunkStreamId.streamCommand,
      typeId: MessageType.commandAmf0,
      streamId,
      timestamp: 0,
      payload: encodeAmf0(...values),
    });
  }

  /** Handshake + connect, as an encoder would start. */
  async connectApp(app = "live"): Promise<void> {
    await this.handshake();
    this.command(["connect", 1, { app, tcUrl: `rtmp://127.0.0.1/${app}` }]);
  }

  /** Whether the received bytes contain `text` (AMF0 strings are plain UTF-8 inside). */
  receivedText(text: string): boolean {
    return Buffer.from(this.received).includes(Buffer.from(text));
  }

  /** Stop reading (a peer that never reads our replies). */
  pause(): void {
    this.socket?.pause();
  }

  close(): void {
    this.socket?.end();
  }
}

export function expectClosedSoon(client: RawClient, ms = 2000): Promise<void> {
  return withTimeout(client.closed, ms, "server closing the connection").then(() => expect(client.isClosed).toBe(true));
}

/**
 * A hostile, unauthenticated client (node:net, so it can bind a loopback
 * source address: 127.0.0.2, 127.0.0.3 … are distinct client IPs to the
 * server). With `handshake` it completes the RTMP handshake first (so only
 * the publish deadline can close it), then trickles the bytes of a connect
 * command one at a time every `intervalMs`, never finishing it.
 */
export class Trickler {
  openedAt = 0;
  closedAt: number | null = null;
  /** The server's S0+S1+S2 arrived: the connection was accepted, not dropped on accept. */
  handshaken = false;
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;
  private timer: ReturnType<typeof setInterval> | null = null;
  private constructor(private readonly socket: import("node:net").Socket) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  static async open(port: number, localAddress: string, options: { intervalMs?: number; handshake?: boolean } = {}): Promise<Trickler> {
    const net = await import("node:net");
    const socket = net.createConnection({ host: "127.0.0.1", port, localAddress });
    const t = new Trickler(socket);
    const interval = options.intervalMs ?? 300;
    const connect = new ChunkWriter().encode({
      chunkStreamId: ChunkStreamId.command,
      typeId: MessageType.commandAmf0,
      streamId: 0,
      timestamp: 0,
      payload: encodeAmf0("connect", 1, { app: "live", tcUrl: "rtmp://127.0.0.1/live" }),
    });
    const trickle: Uint8Array = options.handshake === false ? new Uint8Array([RTMP_VERSION, ...new Uint8Array(HANDSHAKE_PACKET_SIZE)]) : connect;
    let sent = 0;
    const startTrickling = () => {
      t.timer ??= setInterval(() => {
        if (sent < trickle.length) socket.write(trickle.subarray(sent, ++sent));
      }, interval);
    };
    let received = Buffer.alloc(0);
    socket.on("data", (bytes: Buffer) => {
      if (t.handshaken || options.handshake === false) return;
      received = Buffer.concat([received, bytes]);
      if (received.length >= 1 + 2 * HANDSHAKE_PACKET_SIZE) {
        t.handshaken = true;
        socket.write(received.subarray(1, 1 + HANDSHAKE_PACKET_SIZE)); // C2 = echo of S1
        startTrickling();
      }
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      if (t.timer) clearInterval(t.timer);
      t.closedAt = Date.now();
      t.resolveClosed();
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("error", reject);
    });
    t.openedAt = Date.now();
    if (options.handshake === false) startTrickling();
    else {
      const c0c1 = new Uint8Array(1 + HANDSHAKE_PACKET_SIZE);
      c0c1[0] = RTMP_VERSION;
      socket.write(c0c1);
    }
    return t;
  }

  get isClosed(): boolean {
    return this.closedAt !== null;
  }

  destroy(): void {
    if (this.timer) clearInterval(this.timer);
    this.socket.destroy();
  }
}

/**
 * The video tags of `source` with `extraBytes` of H.264 filler data (NAL
 * type 12, which decoders skip) appended to every NALU packet: the same
 * picture at a higher bitrate, with real-time timestamps.
 */
export function padWithFiller<T extends MediaMessage>(source: Iterable<T>, extraBytes: number): MediaMessage[] {
  const out: MediaMessage[] = [];
  for (const tag of source) {
    // AVC (codec 7) NALU packets (AVCPacketType 1); sequence headers and audio pass unchanged.
    if (tag.type !== "video" || (tag.payload[0]! & 0x0f) !== 7 || tag.payload[1] !== 1 || extraBytes < 6) {
      out.push(tag);
      continue;
    }
    const naluLength = extraBytes - 4;
    const padded = new Uint8Array(tag.payload.length + extraBytes);
    padded.set(tag.payload);
    const view = new DataView(padded.buffer);
    view.setUint32(tag.payload.length, naluLength);
    padded[tag.payload.length + 4] = 0x0c; // nal_unit_type 12: filler data
    padded.fill(0xff, tag.payload.length + 5, padded.length - 1);
    padded[padded.length - 1] = 0x80; // rbsp trailing bits
    out.push({ ...tag, payload: padded });
  }
  return out;
}

/** `tags` repeated for `loops` rounds with timestamps continued, so a realtime publish lasts loops × duration. */
export function* looped(tags: MediaMessage[], loops: number): Generator<MediaMessage> {
  const span = tags[tags.length - 1]!.timestamp - tags[0]!.timestamp + 40;
  const sequenceHeaders = new Set(tags.filter((t) => t.type === "data" || (t.payload[1] === 0 && (t.type === "video" || t.type === "audio"))));
  for (let i = 0; i < loops; i++) {
    for (const tag of tags) {
      if (i > 0 && sequenceHeaders.has(tag)) continue;
      yield { ...tag, timestamp: tag.timestamp + i * span };
    }
  }
}
