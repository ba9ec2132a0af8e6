/**
 * Publish-only RTMP server on Bun.listen. It owns sockets, timers and the
 * stream-key index used by kick(); each connection's protocol lives in
 * RtmpSession, and who may connect (per-IP cap, eviction when full, publish
 * deadline, bitrate cap) in ConnectionAdmission. Nothing a peer sends can
 * throw out of here: every failure ends that one connection.
 */
import type { Socket, TCPSocketListener } from "bun";
import { type AdmissionOptions, ConnectionAdmission, RELAY_TOKEN_PARAM, type SeatResult } from "./connection-admission.ts";
import type { PublishHandlers, RtmpLogger } from "./publish-handlers.ts";
import { RtmpSession, type SessionOptions } from "./rtmp-session.ts";
import { SocketWriter } from "./socket-writer.ts";

/** The connection limits (maxConnections, maxConnectionsPerIp, publishDeadlineMs, maxBitrateKbps, bitrateBurstSeconds) are documented on AdmissionOptions. */
export interface RtmpServerOptions extends AdmissionOptions {
  /** 0 picks a free port (read it back from `server.port`). */
  port: number;
  /** Default "0.0.0.0". */
  hostname?: string;
  handlers: PublishHandlers;
  /** C0+C1 and C2 must arrive within this long of connecting. Default 10000. */
  handshakeTimeoutMs?: number;
  /** No bytes from the peer for this long closes the connection. Default 30000. */
  idleTimeoutMs?: number;
  /** Largest RTMP message accepted. Default 4 MiB (a 1080p keyframe is well under 1 MiB). */
  maxMessageBytes?: number;
  /** Chunk size we send with. Default 4096. */
  chunkSize?: number;
  /**
   * Unprocessed bytes buffered while a sink's promise is pending before the
   * socket is paused. Default 256 KiB.
   */
  readHighWaterBytes?: number;
  /** Structured log entries ({ event, connection, ... }); stream keys are redacted. */
  logger?: RtmpLogger;
}

export interface RtmpConnectionStats {
  id: number;
  remoteAddress: string;
  /** Set once the publish was accepted. */
  streamKey: string | null;
  bytesIn: number;
  /** Received but not yet processed (queued bytes + incomplete messages). */
  bufferedBytes: number;
  /** Socket reading is paused because a sink is slow. */
  paused: boolean;
  messagesDelivered: number;
}

export interface RtmpServer {
  readonly port: number;
  readonly hostname: string;
  /** Disconnects every publisher of `streamKey` (their sinks get onClose('kicked')). False if none. */
  kick(streamKey: string): boolean;
  /** Stops accepting, ends every connection (sinks get 'kicked'), resolves when sockets are closed. */
  stop(): Promise<void>;
  /** Open TCP connections, publishing or not. */
  connections(): number;
  stats(): RtmpConnectionStats[];
  /**
   * A place for a publisher relayed into this server from loopback (a WHIP
   * session): counted against `clientAddress` and the total like a
   * connection; the relay puts `seat.token` in its publish URL as
   * `RELAY_TOKEN_PARAM` and its own connection is then not counted. Release
   * the seat when the publisher is gone. See connection-admission.ts.
   */
  reserve(clientAddress: string): SeatResult;
}

export { RELAY_TOKEN_PARAM, type Seat, type SeatResult } from "./connection-admission.ts";

interface Connection {
  /** The session's id and the peer's address, for ConnectionAdmission. */
  id: number;
  remoteAddress: string;
  session: RtmpSession;
  writer: SocketWriter;
  socket: Socket<ConnectionRef>;
  lastActivity: number;
  handshakeTimer: Timer | null;
  idleTimer: Timer | null;
  /** Forces a close when a graceful end is not answered by the peer. */
  lingerTimer: Timer | null;
  closed: boolean;
  onClosed: Array<() => void>;
}

interface ConnectionRef {
  connection: Connection | null;
}

/** A graceful end waits this long for the peer to close before dropping the socket. */
const LINGER_MS = 2000;
/**
 * We only send small replies; this much unsent means the peer does not read
 * while provoking replies (ping floods), so it is dropped instead of buffered.
 */
const MAX_UNSENT_BYTES = 1024 * 1024;

export async function createRtmpServer(options: RtmpServerOptions): Promise<RtmpServer> {
  const log: RtmpLogger = options.logger ?? (() => {});
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? 10_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
  const sessionOptions: SessionOptions = {
    maxMessageBytes: options.maxMessageBytes ?? 4 * 1024 * 1024,
    maxChunkStreams: 64,
    outChunkSize: options.chunkSize ?? 4096,
    ackWindow: 5_000_000,
    readHighWaterBytes: options.readHighWaterBytes ?? 256 * 1024,
    maxStreams: 8,
  };

  const open = new Set<Connection>();
  const publishers = new Map<string, Set<RtmpSession>>();
  const admission = new ConnectionAdmission<Connection>(
    options,
    {
      evict: (connection) => connection.session.terminate("kicked", false),
      expire: (connection) => connection.session.terminate("timeout", false),
      isLive: (streamKey) => publishers.has(streamKey),
    },
    log,
  );
  let nextId = 1;

  function closeSocket(connection: Connection, graceful: boolean): void {
    if (connection.closed) return;
    const { socket, writer } = connection;
    clearTimers(connection);
    if (!graceful) {
      socket.terminate();
      return;
    }
    // Half-close (FIN) and keep reading until the peer closes: Bun's end() would close the
    // descriptor, and bytes the peer still sends would draw an RST that can destroy our last
    // onStatus (e.g. the refusal reason) in the peer's receive buffer. The session ignores
    // what arrives now. Reading may be paused by backpressure; resume so the peer's FIN is seen.
    socket.resume();
    // Replies may still be queued (corked, or waiting for drain): FIN after them.
    void writer.whenDrained().then(() => {
      if (!connection.closed) socket.shutdown();
    });
    connection.lingerTimer = setTimeout(() => {
      if (!connection.closed) socket.terminate();
    }, LINGER_MS);
  }

  function clearTimers(connection: Connection): void {
    if (connection.handshakeTimer) clearTimeout(connection.handshakeTimer);
    if (connection.idleTimer) clearTimeout(connection.idleTimer);
    connection.handshakeTimer = null;
    connection.idleTimer = null;
  }

  function scheduleIdleCheck(connection: Connection, delay: number): void {
    connection.idleTimer = setTimeout(() => {
      if (connection.closed || connection.session.closed) return;
      const now = Date.now();
      // A paused socket is silent because of our sink, not the peer.
      if (connection.session.backpressured) connection.lastActivity = now;
      const idle = now - connection.lastActivity;
      if (idle >= idleTimeoutMs) {
        log({ event: "rtmp.timeout", connection: connection.session.id, kind: "idle", idleMs: idle });
        connection.session.terminate("timeout");
      } else {
        scheduleIdleCheck(connection, idleTimeoutMs - idle);
      }
    }, delay);
  }

  const listener: TCPSocketListener<ConnectionRef> = Bun.listen<ConnectionRef>({
    hostname: options.hostname ?? "0.0.0.0",
    port: options.port,
    data: { connection: null },
    socket: {
      binaryType: "uint8array",
      open(socket) {
        socket.data = { connection: null };
        const admitted = admission.admit(socket.remoteAddress);
        if (!admitted) {
          socket.terminate();
          return;
        }
        const id = nextId++;
        const writer = new SocketWriter(socket);
        const connection: Connection = {
          id,
          remoteAddress: socket.remoteAddress,
          session: null as unknown as RtmpSession,
          writer,
          socket,
          lastActivity: Date.now(),
          handshakeTimer: null,
          idleTimer: null,
          lingerTimer: null,
          closed: false,
          onClosed: [],
        };
        connection.session = new RtmpSession(
          id,
          socket.remoteAddress,
          {
            write: (bytes) => {
              writer.write(bytes);
              if (writer.pendingBytes > MAX_UNSENT_BYTES) {
                log({ event: "rtmp.protocol.error", connection: id, error: "peer does not read our replies" });
                // Deferred: we are inside the session's own processing loop.
                queueMicrotask(() => connection.session.terminate("error", false));
              }
            },
            pause: () => socket.pause(),
            resume: () => socket.resume(),
            close: (graceful) => closeSocket(connection, graceful),
          },
          {
            // The relay token is ours, not the embedder's; a connection on probation is counted (or refused) here, before authorize.
            // Not async: the embedder's own promise (or throw) goes to the session as is.
            authorize: (request) => {
              const relayToken = request.query.get(RELAY_TOKEN_PARAM);
              request.query.delete(RELAY_TOKEN_PARAM);
              if (!admission.publishing(connection, relayToken)) return Promise.resolve({ ok: false, reason: "too many connections from this address", status: "Rejected" });
              return options.handlers.authorize(request);
            },
          },
          sessionOptions,
          {
            onPublishStarted(session) {
              const key = session.publishing!.streamKey;
              let set = publishers.get(key);
              if (!set) publishers.set(key, (set = new Set()));
              set.add(session);
              return admission.published(connection, key);
            },
            onEnded(session) {
              admission.ended(connection);
              // The session no longer reports its key once closed, so scan: the map holds only live publishers.
              for (const [key, set] of publishers) {
                if (set.delete(session) && set.size === 0) publishers.delete(key);
              }
            },
          },
          log,
        );
        socket.data.connection = connection;
        open.add(connection);
        admission.opened(connection, admitted);
        connection.handshakeTimer = setTimeout(() => {
          if (connection.closed || connection.session.handshakeDone) return;
          log({ event: "rtmp.timeout", connection: id, kind: "handshake" });
          connection.session.terminate("timeout", false);
        }, handshakeTimeoutMs);
        scheduleIdleCheck(connection, idleTimeoutMs);
        log({ event: "rtmp.open", connection: id, remoteAddress: socket.remoteAddress });
      },
      data(socket, bytes) {
        const connection = socket.data.connection;
        if (!connection || connection.closed) return;
        connection.lastActivity = Date.now();
        connection.writer.cork();
        connection.session.receive(bytes);
        connection.writer.uncork();
        if (connection.handshakeTimer && connection.session.handshakeDone) {
          clearTimeout(connection.handshakeTimer);
          connection.handshakeTimer = null;
        }
      },
      drain(socket) {
        const connection = socket.data.connection;
        if (!connection) return;
        connection.writer.flush();
      },
      close(socket) {
        const connection = socket.data.connection;
        if (!connection || connection.closed) return;
        connection.closed = true;
        clearTimers(connection);
        if (connection.lingerTimer) clearTimeout(connection.lingerTimer);
        connection.writer.markClosed();
        open.delete(connection);
        admission.closed(connection);
        connection.session.socketClosed();
        for (const resolve of connection.onClosed.splice(0)) resolve();
      },
      error(socket, error) {
        // Only reached if a handler above threw; the session already guards itself.
        log({ event: "rtmp.socket.error", connection: socket.data.connection?.session.id, error: String(error) });
        socket.terminate();
      },
    },
  });

  return {
    port: listener.port,
    hostname: listener.hostname,
    kick(streamKey) {
      const sessions = publishers.get(streamKey);
      if (!sessions || sessions.size === 0) return false;
      for (const session of [...sessions]) {
        log({ event: "rtmp.kick", connection: session.id });
        session.terminate("kicked");
      }
      return true;
    },
    async stop() {
      admission.stop();
      const waits: Promise<void>[] = [];
      for (const connection of open) {
        waits.push(new Promise<void>((resolve) => connection.onClosed.push(resolve)));
        connection.session.terminate("kicked", false);
        // A session that had already ended may still hold its socket in linger.
        if (!connection.closed) connection.socket.terminate();
      }
      listener.stop(true);
      await Promise.race([Promise.all(waits), Bun.sleep(LINGER_MS)]);
    },
    connections() {
      return open.size;
    },
    reserve(clientAddress) {
      return admission.reserve(clientAddress);
    },
    stats() {
      return [...open].map(({ session }) => ({
        id: session.id,
        remoteAddress: session.remoteAddress,
        streamKey: session.publishing?.streamKey ?? null,
        ...session.stats(),
      }));
    },
  };
}
