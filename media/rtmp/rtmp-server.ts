/**
 * Publish-only RTMP server on Bun.listen. It owns sockets, timers, the
 * connection limits and the stream-key index used by kick(); each
 * connection's protocol lives in RtmpSession. Nothing a peer sends can throw
 * out of here: every failure ends that one connection.
 *
 * Fair shares for strangers: an unauthenticated peer holds a connection for
 * at most `publishDeadlineMs` (trickled bytes do not extend it), one address
 * holds at most `maxConnectionsPerIp` of them, and when the server is full a
 * newcomer takes the place of the oldest connection that has not published.
 */
import type { Socket, TCPSocketListener } from "bun";
import { BitrateMeter } from "./bitrate-meter.ts";
import { clientAddressKey } from "./client-address.ts";
import type { PublishHandlers, RtmpLogger } from "./publish-handlers.ts";
import { RtmpSession, type SessionOptions } from "./rtmp-session.ts";
import { SocketWriter } from "./socket-writer.ts";

export interface RtmpServerOptions {
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
  /**
   * Simultaneous connections. When full, a new connection replaces the
   * oldest one that has not published yet; if every connection publishes,
   * the new one is dropped on accept. Default 1000.
   */
  maxConnections?: number;
  /**
   * Simultaneous connections from one client address (IPv4 address, or IPv6
   * /64); more are closed on accept. 0 = no limit. Default 20.
   */
  maxConnectionsPerIp?: number;
  /**
   * From TCP accept to an accepted publish, at most this long; then the
   * connection is closed, whatever it sent meanwhile. 0 = no deadline. Default 10000.
   */
  publishDeadlineMs?: number;
  /**
   * Ingest bitrate cap per stream key, on message payload bytes after the
   * publish (token bucket, see bitrate-meter.ts); over it the publisher is
   * disconnected (sink: onClose('bitrate')). 0 = no cap. Default 0.
   */
  maxBitrateKbps?: number;
  /** How far ahead of the cap a publisher may get (bucket size, in seconds of the cap). Default 5. */
  bitrateBurstSeconds?: number;
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
}

interface Connection {
  session: RtmpSession;
  writer: SocketWriter;
  socket: Socket<ConnectionRef>;
  lastActivity: number;
  /** Who the per-IP cap counts this connection against (clientAddressKey). */
  addressKey: string;
  handshakeTimer: Timer | null;
  /** Closes the connection if it has not published by publishDeadlineMs after accept. */
  publishTimer: Timer | null;
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
/** Refusals of one kind from one address are logged once per this window (with a count after). */
const REFUSAL_LOG_WINDOW_MS = 10_000;
/** Distinct addresses tracked for refusal logging before further ones share one entry. */
const REFUSAL_LOG_MAX_KEYS = 1000;

/**
 * Logs the first refusal of a burst at once and only a count of the rest:
 * an abusive client must not turn its refused sockets into a log flood.
 */
class BurstLog {
  private readonly bursts = new Map<string, { count: number; timer: Timer; entry: Record<string, unknown> }>();
  constructor(
    private readonly log: RtmpLogger,
    private readonly windowMs: number,
  ) {}

  note(key: string, entry: Record<string, unknown>): void {
    if (!this.bursts.has(key) && this.bursts.size >= REFUSAL_LOG_MAX_KEYS) key = "*";
    const burst = this.bursts.get(key);
    if (burst) {
      burst.count++;
      return;
    }
    this.log(entry);
    const timer = setTimeout(() => this.flush(key), this.windowMs);
    timer.unref?.();
    this.bursts.set(key, { count: 0, timer, entry });
  }

  stop(): void {
    for (const key of [...this.bursts.keys()]) this.flush(key);
  }

  private flush(key: string): void {
    const burst = this.bursts.get(key);
    if (!burst) return;
    clearTimeout(burst.timer);
    this.bursts.delete(key);
    if (burst.count > 0) {
      this.log({ ...burst.entry, repeated: burst.count, windowMs: this.windowMs, msg: `${String(burst.entry.msg)} (${burst.count} more within ${this.windowMs} ms)` });
    }
  }
}

export async function createRtmpServer(options: RtmpServerOptions): Promise<RtmpServer> {
  const log: RtmpLogger = options.logger ?? (() => {});
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? 10_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
  const maxConnections = options.maxConnections ?? 1000;
  const maxConnectionsPerIp = options.maxConnectionsPerIp ?? 20;
  const publishDeadlineMs = options.publishDeadlineMs ?? 10_000;
  const maxBitrateKbps = options.maxBitrateKbps ?? 0;
  const bitrateBurstSeconds = options.bitrateBurstSeconds ?? 5;
  const sessionOptions: SessionOptions = {
    maxMessageBytes: options.maxMessageBytes ?? 4 * 1024 * 1024,
    maxChunkStreams: 64,
    outChunkSize: options.chunkSize ?? 4096,
    ackWindow: 5_000_000,
    readHighWaterBytes: options.readHighWaterBytes ?? 256 * 1024,
    maxStreams: 8,
  };

  const open = new Set<Connection>();
  /** Connections whose session has not published (nor ended), oldest first: who makes room when full. */
  const unpublished = new Set<Connection>();
  /** Open connections per client address key. */
  const perAddress = new Map<string, number>();
  const publishers = new Map<string, Set<RtmpSession>>();
  /** Bitrate meters per stream key, kept after a publish ends until full again, so a reconnect does not reset the cap. */
  const meters = new Map<string, BitrateMeter>();
  const refusals = new BurstLog(log, REFUSAL_LOG_WINDOW_MS);
  let nextId = 1;
  let stopping = false;

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
    if (connection.publishTimer) clearTimeout(connection.publishTimer);
    connection.handshakeTimer = null;
    connection.idleTimer = null;
    connection.publishTimer = null;
  }

  function meterFor(streamKey: string): BitrateMeter | null {
    if (maxBitrateKbps <= 0) return null;
    const now = performance.now();
    for (const [key, meter] of meters) if (!publishers.has(key) && meter.isFull(now)) meters.delete(key);
    let meter = meters.get(streamKey);
    if (!meter) meters.set(streamKey, (meter = new BitrateMeter(maxBitrateKbps, bitrateBurstSeconds, now)));
    return meter;
  }

  /** Whether a new connection from `remoteAddress` may be accepted; makes room when the server is full. */
  function admit(remoteAddress: string, addressKey: string): boolean {
    if (stopping) {
      log({ event: "rtmp.refused", reason: "stopping", remoteAddress });
      return false;
    }
    if (maxConnectionsPerIp > 0 && (perAddress.get(addressKey) ?? 0) >= maxConnectionsPerIp) {
      refusals.note(`ip ${addressKey}`, {
        event: "rtmp.refused",
        level: "warn",
        msg: "RTMP connection refused: too many connections from one address",
        reason: "per-ip limit",
        remoteAddress,
        limit: maxConnectionsPerIp,
      });
      return false;
    }
    if (open.size < maxConnections) return true;
    const oldest = unpublished.values().next().value as Connection | undefined;
    if (!oldest) {
      refusals.note("capacity", {
        event: "rtmp.refused",
        level: "warn",
        msg: "RTMP connection refused: every connection is publishing",
        reason: "max connections",
        remoteAddress,
        limit: maxConnections,
      });
      return false;
    }
    refusals.note("evicted", {
      event: "rtmp.evicted",
      level: "warn",
      msg: "RTMP server full: the oldest connection that has not published made room for a new one",
      connection: oldest.session.id,
      remoteAddress: oldest.socket.remoteAddress,
      limit: maxConnections,
    });
    unpublished.delete(oldest);
    oldest.session.terminate("kicked", false);
    return true;
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
        const addressKey = clientAddressKey(socket.remoteAddress);
        if (!admit(socket.remoteAddress, addressKey)) {
          socket.terminate();
          return;
        }
        const id = nextId++;
        const writer = new SocketWriter(socket);
        const connection: Connection = {
          session: null as unknown as RtmpSession,
          writer,
          socket,
          lastActivity: Date.now(),
          addressKey,
          handshakeTimer: null,
          publishTimer: null,
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
          options.handlers,
          sessionOptions,
          {
            onPublishStarted(session) {
              unpublished.delete(connection);
              if (connection.publishTimer) clearTimeout(connection.publishTimer);
              connection.publishTimer = null;
              const key = session.publishing!.streamKey;
              let set = publishers.get(key);
              if (!set) publishers.set(key, (set = new Set()));
              set.add(session);
              return meterFor(key);
            },
            onEnded(session) {
              unpublished.delete(connection);
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
        unpublished.add(connection);
        perAddress.set(addressKey, (perAddress.get(addressKey) ?? 0) + 1);
        if (publishDeadlineMs > 0) {
          // Not refreshed by incoming bytes: a peer trickling bytes cannot hold its place past it.
          connection.publishTimer = setTimeout(() => {
            connection.publishTimer = null;
            if (connection.closed || connection.session.closed || connection.session.publishing) return;
            log({ event: "rtmp.timeout", connection: id, kind: "publish deadline", deadlineMs: publishDeadlineMs, remoteAddress: socket.remoteAddress });
            connection.session.terminate("timeout", false);
          }, publishDeadlineMs);
        }
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
        unpublished.delete(connection);
        const left = (perAddress.get(connection.addressKey) ?? 1) - 1;
        if (left > 0) perAddress.set(connection.addressKey, left);
        else perAddress.delete(connection.addressKey);
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
      stopping = true;
      const waits: Promise<void>[] = [];
      for (const connection of open) {
        waits.push(new Promise<void>((resolve) => connection.onClosed.push(resolve)));
        connection.session.terminate("kicked", false);
        // A session that had already ended may still hold its socket in linger.
        if (!connection.closed) connection.socket.terminate();
      }
      listener.stop(true);
      refusals.stop();
      await Promise.race([Promise.all(waits), Bun.sleep(LINGER_MS)]);
    },
    connections() {
      return open.size;
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
