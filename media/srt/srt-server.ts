import { loadSrt, SRT_EPOLL, SRTO, SRTS_BROKEN, type SrtLibrary } from "./srt-library.ts";
import { parseStreamId, type SrtStreamId } from "./stream-id.ts";

/** A caller the listener accepted (its handshake done), before anything of its media was read. */
export interface SrtPeer {
  id: number;
  /** Its SRTO_STREAMID, parsed (`publish:KEY` or the access-control form `#!::r=KEY,m=publish`). */
  streamId: SrtStreamId;
  remoteAddress: string;
  /** Closes the socket now; the sink gets onClose('closed'). */
  close(): void;
}

export type SrtCloseReason = "disconnect" | "closed" | "error" | "stopped";

export interface SrtPeerSink {
  /** Nothing of the peer's media is read until this resolves (authorize first); a rejection closes it. */
  ready?: Promise<void>;
  /** Bytes as received (whole SRT messages, usually 7 TS packets each), in order. A promise holds further reads until it settles (SRT's flow control then slows the caller). A throw closes the peer. */
  onData(chunk: Uint8Array): void | Promise<void>;
  /** Exactly once. */
  onClose(reason: SrtCloseReason): void;
}

export interface SrtServerOptions {
  port: number;
  hostname?: string;
  /** Called for each accepted caller; null closes it at once. Synchronous: the decision may wait in `ready`. */
  onConnect(peer: SrtPeer): SrtPeerSink | null;
  /** Accepted callers at once; more are closed on accept. Default 1000. */
  maxConnections?: number;
  /** How often SRT's epoll is polled (srt_epoll_uwait with a 0 timeout). Default 5 ms. */
  pollMs?: number;
  library?: SrtLibrary;
  logger?: (entry: Record<string, unknown>) => void;
}

export interface SrtServer {
  port: number;
  connections(): number;
  stop(): Promise<void>;
}

interface Conn {
  peer: SrtPeer;
  sink: SrtPeerSink;
  ready: boolean;
  busy: boolean;
  closed: boolean;
}

/** SRT live mode's payload is at most 1456 bytes (1316 by default). */
const MESSAGE_BYTES = 1500;
/** Messages read per socket per poll at most (~1.3 MB), so one fast caller cannot starve the event loop. */
const READS_PER_POLL = 1000;
const MAX_EVENTS = 64;

/**
 * One SRT listening socket for every stream, polled from a timer through
 * SRT's own epoll (srt_epoll_uwait with a 0 timeout): accept and receive
 * never block the event loop. The handshake itself (and garbage on the
 * port) is handled by libsrt's own thread.
 */
export function createSrtServer(options: SrtServerOptions): SrtServer {
  const lib = options.library ?? loadSrt();
  if (!lib) throw new Error("libsrt is not installed");
  const { fn } = lib;
  const log = options.logger ?? (() => {});
  const maxConnections = options.maxConnections ?? 1000;
  const fail = (what: string) => new Error(`${what}: ${lib.lastError()}`);

  const lsn = fn.srt_create_socket();
  if (lsn < 0) throw fail("srt_create_socket");
  const setInt = (sock: number, opt: number, value: number) => fn.srt_setsockflag(sock, opt, new Int32Array([value]), 4);
  // Non-blocking accept and receive (accepted sockets inherit it; set again below to be sure).
  setInt(lsn, SRTO.RCVSYN, 0);
  setInt(lsn, SRTO.SNDSYN, 0);
  const addr = sockaddr(options.hostname ?? "0.0.0.0", options.port);
  if (fn.srt_bind(lsn, addr, addr.length) < 0) {
    const err = fail(`srt_bind ${options.hostname ?? "0.0.0.0"}:${options.port}`);
    fn.srt_close(lsn);
    throw err;
  }
  if (fn.srt_listen(lsn, 64) < 0) {
    const err = fail("srt_listen");
    fn.srt_close(lsn);
    throw err;
  }
  const nameBuf = new Uint8Array(128);
  const nameLen = new Int32Array([nameBuf.length]);
  fn.srt_getsockname(lsn, nameBuf, nameLen);
  const port = (nameBuf[2]! << 8) | nameBuf[3]!;

  const eid = fn.srt_epoll_create();
  const events = new Int32Array([SRT_EPOLL.IN | SRT_EPOLL.ERR]);
  fn.srt_epoll_add_usock(eid, lsn, events);
  const conns = new Map<number, Conn>();
  const eventBuf = new Int32Array(MAX_EVENTS * 2);
  const recvBuf = new Uint8Array(MESSAGE_BYTES);
  const idBuf = new Uint8Array(768);
  const idLen = new Int32Array(1);
  let nextId = 1;
  let stopped = false;

  function close(sock: number, conn: Conn, reason: SrtCloseReason) {
    if (conn.closed) return;
    conn.closed = true;
    conns.delete(sock);
    fn.srt_epoll_remove_usock(eid, sock);
    fn.srt_close(sock);
    log({ event: "srt.close", connection: conn.peer.id, reason });
    try {
      conn.sink.onClose(reason);
    } catch {
      // A sink's failure at close has nobody to tell.
    }
  }

  function acceptAll() {
    for (;;) {
      const peerAddr = new Uint8Array(128);
      const peerLen = new Int32Array([peerAddr.length]);
      const sock = fn.srt_accept(lsn, peerAddr, peerLen);
      if (sock < 0) return;
      setInt(sock, SRTO.RCVSYN, 0);
      idLen[0] = idBuf.length;
      const raw = fn.srt_getsockflag(sock, SRTO.STREAMID, idBuf, idLen) < 0 ? "" : new TextDecoder().decode(idBuf.subarray(0, Math.max(0, Math.min(idLen[0]!, idBuf.length))));
      const remoteAddress = addressOf(peerAddr);
      const id = nextId++;
      if (stopped || conns.size >= maxConnections) {
        log({ event: "srt.refused", connection: id, remote: remoteAddress, level: "warn", msg: "SRT caller refused: too many connections", limit: maxConnections });
        fn.srt_close(sock);
        continue;
      }
      const conn: Conn = { peer: undefined as unknown as SrtPeer, sink: undefined as unknown as SrtPeerSink, ready: false, busy: false, closed: false };
      conn.peer = { id, streamId: parseStreamId(raw), remoteAddress, close: () => close(sock, conn, "closed") };
      log({ event: "srt.accept", connection: id, remote: remoteAddress });
      let sink: SrtPeerSink | null = null;
      try {
        sink = options.onConnect(conn.peer);
      } catch {
        sink = null;
      }
      if (!sink) {
        fn.srt_close(sock);
        continue;
      }
      conn.sink = sink;
      conns.set(sock, conn);
      fn.srt_epoll_add_usock(eid, sock, events);
      if (!sink.ready) conn.ready = true;
      else
        sink.ready.then(
          () => {
            conn.ready = true;
          },
          () => close(sock, conn, "closed"),
        );
    }
  }

  function readFrom(sock: number, conn: Conn) {
    const chunks: Uint8Array[] = [];
    let total = 0;
    let gone = false;
    for (let i = 0; i < READS_PER_POLL; i++) {
      const n = fn.srt_recvmsg(sock, recvBuf, recvBuf.length);
      if (n > 0) {
        chunks.push(recvBuf.slice(0, n));
        total += n;
        continue;
      }
      // -1 with "nothing now" (6002) while connected; anything else, or 0, is the end.
      if (n === 0 || fn.srt_getsockstate(sock) >= SRTS_BROKEN) gone = true;
      break;
    }
    if (total > 0) deliver(sock, conn, concat(chunks, total));
    if (gone && !conn.closed) close(sock, conn, "disconnect");
  }

  function deliver(sock: number, conn: Conn, chunk: Uint8Array) {
    let r: void | Promise<void>;
    try {
      r = conn.sink.onData(chunk);
    } catch {
      close(sock, conn, "error");
      return;
    }
    if (r && typeof (r as Promise<void>).then === "function") {
      conn.busy = true;
      (r as Promise<void>).then(
        () => {
          conn.busy = false;
        },
        () => close(sock, conn, "error"),
      );
    }
  }

  function poll() {
    const n = fn.srt_epoll_uwait(eid, eventBuf, MAX_EVENTS, 0);
    for (let i = 0; i < n; i++) {
      const sock = eventBuf[i * 2]!;
      if (sock === lsn) {
        acceptAll();
        continue;
      }
      const conn = conns.get(sock);
      if (!conn) {
        fn.srt_epoll_remove_usock(eid, sock);
        continue;
      }
      if (!conn.ready || conn.busy) {
        if (fn.srt_getsockstate(sock) >= SRTS_BROKEN) close(sock, conn, "disconnect");
        continue;
      }
      readFrom(sock, conn);
    }
  }

  const timer = setInterval(poll, options.pollMs ?? 5);
  return {
    port,
    connections: () => conns.size,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      for (const [sock, conn] of [...conns]) close(sock, conn, "stopped");
      fn.srt_close(lsn);
      fn.srt_epoll_release(eid);
    },
  };
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

/** A sockaddr_in (16 bytes) or sockaddr_in6 (28 bytes) for srt_bind. */
export function sockaddr(hostname: string, port: number): Uint8Array {
  const host = hostname === "localhost" ? "127.0.0.1" : hostname;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) {
    const a = new Uint8Array(16);
    a[0] = 2; // AF_INET, little-endian
    a[2] = port >> 8;
    a[3] = port & 0xff;
    for (let i = 0; i < 4; i++) a[4 + i] = Number(v4[i + 1]);
    return a;
  }
  if (host === "::" || host === "::1" || host === "[::]") {
    const a = new Uint8Array(28);
    a[0] = 10; // AF_INET6
    a[2] = port >> 8;
    a[3] = port & 0xff;
    if (host === "::1") a[23] = 1;
    return a;
  }
  throw new Error(`SRT listens on an IPv4 address, :: or ::1, not ${hostname}`);
}

function addressOf(a: Uint8Array): string {
  if (a[0] === 2) return `${a[4]}.${a[5]}.${a[6]}.${a[7]}`;
  if (a[0] === 10) {
    const v = new DataView(a.buffer, a.byteOffset + 8, 16);
    // IPv4-mapped (::ffff:a.b.c.d) reads as the IPv4 address, as Bun reports TCP peers.
    if (v.getUint32(0) === 0 && v.getUint32(4) === 0 && v.getUint32(8) === 0xffff) return `${a[20]}.${a[21]}.${a[22]}.${a[23]}`;
    const parts: string[] = [];
    for (let i = 0; i < 8; i++) parts.push(v.getUint16(i * 2).toString(16));
    return parts.join(":");
  }
  return "unknown";
}
