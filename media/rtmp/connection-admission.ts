/**
 * Who may hold a connection to the RTMP server, and for how long before it
 * publishes. Fair shares for strangers: an unauthenticated peer holds a
 * connection for at most `publishDeadlineMs` (trickled bytes do not extend
 * it), one address holds at most `maxConnectionsPerIp` of them, and when the
 * server is full a newcomer takes the place of the oldest connection that has
 * not published. Once publishing, a stream is held to its bitrate cap.
 *
 * No sockets here: the server reports each connection's life (opened,
 * published, ended, closed) and ends the connections this policy gives up on.
 *
 * Seats: a publisher that reaches us by another protocol (a WHIP session,
 * src/webrtc) and is relayed into this server from loopback takes a seat
 * with `reserve(itsClientAddress)`: the seat counts against the client's own
 * address and the total, exactly like a connection, and its relay connection
 * (which presents the seat's token in its publish URL, RELAY_TOKEN_PARAM) is
 * not counted again, so relays never exhaust 127.0.0.1's share. Other
 * loopback clients stay limited: while a seat waits for its relay, one
 * loopback connection per waiting seat is let in on probation (counted
 * nowhere); at its publish it must present the token, or it is counted
 * against its address then, and refused if that address is full.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { BitrateMeter } from "./bitrate-meter.ts";
import { clientAddressKey } from "./client-address.ts";
import type { RtmpLogger } from "./publish-handlers.ts";

/** The limits; also part of RtmpServerOptions, documented there for users of the server. */
export interface AdmissionOptions {
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
}

/** What the policy needs to know about a connection: who it is, for logs. */
export interface AdmittedConnection {
  readonly id: number;
  readonly remoteAddress: string;
}

export interface AdmissionHooks<C extends AdmittedConnection> {
  /** Drop `connection` now: it makes room for a newcomer (its sink, if any, gets 'kicked'). */
  evict(connection: C): void;
  /** Drop `connection` now: it has not published within the publish deadline. */
  expire(connection: C): void;
  /** Whether `streamKey` has a live publisher (its meter is then kept even when full). */
  isLive(streamKey: string): boolean;
}

/** The publish URL parameter carrying a seat's token (removed before authorize sees the query). */
export const RELAY_TOKEN_PARAM = "relay";

/** Why a connection or a seat was refused (the value of `reason` in the `rtmp.refused` log). */
export type RefusalReason = "stopping" | "per-ip limit" | "max connections";

/** What admit() decided for an accepted connection; given back to opened(). */
export interface Admitted {
  /** Let in for a seat waiting for its relay: counted nowhere until its publish shows the token. */
  probation: boolean;
}

/** A place held by a publisher relayed into this server (see the file's comment). */
export interface Seat {
  /** Put in the relay's publish URL as `RELAY_TOKEN_PARAM`: its connection is then not counted. */
  readonly token: string;
  /** The publisher is gone: its place is free (idempotent). */
  release(): void;
}

export type SeatResult = { ok: true; seat: Seat } | { ok: false; reason: RefusalReason; limit?: number };

/** Refusals of one kind from one address are logged once per this window (with a count after). */
const REFUSAL_LOG_WINDOW_MS = 10_000;
/** Distinct addresses tracked for refusal logging before further ones share one entry. */
const REFUSAL_LOG_MAX_KEYS = 1000;

interface Held {
  /** Who the per-IP cap counts this connection against (clientAddressKey); null: counted nowhere, not even in the total (a seat's relay, on probation, or refused at its publish and closing). */
  addressKey: string | null;
  /** Closes the connection if it has not published by publishDeadlineMs after accept. */
  deadline: Timer | null;
  /** Published or ended: no deadline any more. */
  settled: boolean;
  /** On probation (waiting to show a seat's token), or the relay of that seat. */
  relay: "probation" | SeatRecord | null;
}

interface SeatRecord {
  token: string;
  addressKey: string;
  /** The relay connection that showed the token (one per seat). */
  connection: unknown;
}

/** 127.0.0.0/8 (also IPv4-mapped, which clientAddressKey unwraps) or ::1: where our own relays connect from. */
const isLoopback = (remoteAddress: string, addressKey: string) => addressKey.startsWith("127.") || remoteAddress === "::1";

const sameToken = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export class ConnectionAdmission<C extends AdmittedConnection> {
  private readonly maxConnections: number;
  private readonly maxConnectionsPerIp: number;
  private readonly publishDeadlineMs: number;
  private readonly maxBitrateKbps: number;
  private readonly bitrateBurstSeconds: number;
  /** Every open connection, accepted and not yet closed. */
  private readonly held = new Map<C, Held>();
  /** Connections that have not published (nor ended), oldest first: who makes room when full. */
  private readonly unpublished = new Set<C>();
  /** Open connections per client address key. */
  private readonly perAddress = new Map<string, number>();
  /** Seats by token. */
  private readonly seats = new Map<string, SeatRecord>();
  /** Connections not counted (relays and connections on probation): their seat holds their place. */
  private uncounted = 0;
  private probation = 0;
  /** Bitrate meters per stream key, kept after a publish ends until full again, so a reconnect does not reset the cap. */
  private readonly meters = new Map<string, BitrateMeter>();
  private readonly refusals: BurstLog;
  private stopping = false;

  constructor(
    options: AdmissionOptions,
    private readonly hooks: AdmissionHooks<C>,
    private readonly log: RtmpLogger,
  ) {
    this.maxConnections = options.maxConnections ?? 1000;
    this.maxConnectionsPerIp = options.maxConnectionsPerIp ?? 20;
    this.publishDeadlineMs = options.publishDeadlineMs ?? 10_000;
    this.maxBitrateKbps = options.maxBitrateKbps ?? 0;
    this.bitrateBurstSeconds = options.bitrateBurstSeconds ?? 5;
    this.refusals = new BurstLog(log, REFUSAL_LOG_WINDOW_MS);
  }

  /** Whether a new connection from `remoteAddress` may be accepted (null: refused); makes room when the server is full. */
  admit(remoteAddress: string): Admitted | null {
    if (this.stopping) {
      this.log({ event: "rtmp.refused", reason: "stopping", remoteAddress });
      return null;
    }
    const addressKey = clientAddressKey(remoteAddress);
    // Possibly a seat's relay: it cannot show its token before its publish, and its seat already holds its place.
    if (isLoopback(remoteAddress, addressKey) && this.waitingSeats() > this.probation) return { probation: true };
    return this.makeRoom(remoteAddress, addressKey, "RTMP connection") ? { probation: false } : null;
  }

  /**
   * A place for a publisher that reaches us by another protocol and is relayed
   * in from loopback (a WHIP session): the same per-IP cap on its own
   * `clientAddress` and the same total as a connection; its relay's connection
   * then counts nowhere. Refused: nothing is held.
   */
  reserve(clientAddress: string): SeatResult {
    if (this.stopping) return { ok: false, reason: "stopping" };
    const addressKey = clientAddressKey(clientAddress);
    if (!this.makeRoom(clientAddress, addressKey, "Relayed publisher")) {
      const full = this.maxConnectionsPerIp > 0 && (this.perAddress.get(addressKey) ?? 0) >= this.maxConnectionsPerIp;
      return full ? { ok: false, reason: "per-ip limit", limit: this.maxConnectionsPerIp } : { ok: false, reason: "max connections", limit: this.maxConnections };
    }
    const record: SeatRecord = { token: randomBytes(16).toString("hex"), addressKey, connection: null };
    this.seats.set(record.token, record);
    this.count(addressKey, +1);
    let released = false;
    return {
      ok: true,
      seat: {
        token: record.token,
        release: () => {
          if (released) return;
          released = true;
          this.seats.delete(record.token);
          this.count(addressKey, -1);
        },
      },
    };
  }

  /**
   * `connection` asks to publish, showing `relayToken` (the URL's
   * RELAY_TOKEN_PARAM, or null). A seat's token makes it that seat's relay
   * (counted nowhere from now on). Without one, a connection on probation is
   * counted against its address now: false when that address (or the
   * server) is full, and the publish is refused.
   */
  publishing(connection: C, relayToken: string | null): boolean {
    const held = this.held.get(connection);
    if (!held) return false;
    if (held.relay && held.relay !== "probation") return true;
    const seat = relayToken ? this.waitingSeat(relayToken) : undefined;
    const onProbation = held.relay === "probation";
    if (onProbation) {
      this.probation--;
      held.relay = null;
    }
    if (seat) {
      if (held.addressKey !== null) {
        // Counted on accept (no seat waited then, or another took the probation place): its seat holds its place instead.
        this.unpublished.delete(connection);
        this.count(held.addressKey, -1);
        held.addressKey = null;
        this.uncounted++;
      }
      held.relay = seat;
      seat.connection = connection;
      return true;
    }
    if (!onProbation) return true;
    const addressKey = clientAddressKey(connection.remoteAddress);
    // Refused: it closes, counted nowhere meanwhile.
    if (!this.makeRoom(connection.remoteAddress, addressKey, "RTMP publish")) return false;
    this.uncounted--;
    held.addressKey = addressKey;
    this.count(addressKey, +1);
    return true;
  }

  /** Whether one more connection or seat from `addressKey` fits (per-IP cap, then the total, evicting the oldest unpublished connection if full); logs refusals. */
  private makeRoom(remoteAddress: string, addressKey: string, what: string): boolean {
    if (this.maxConnectionsPerIp > 0 && (this.perAddress.get(addressKey) ?? 0) >= this.maxConnectionsPerIp) {
      this.refusals.note(`ip ${addressKey}`, {
        event: "rtmp.refused",
        level: "warn",
        msg: `${what} refused: too many connections from one address`,
        reason: "per-ip limit",
        remoteAddress,
        limit: this.maxConnectionsPerIp,
      });
      return false;
    }
    if (this.held.size - this.uncounted + this.seats.size < this.maxConnections) return true;
    const oldest = this.unpublished.values().next().value as C | undefined;
    if (!oldest) {
      this.refusals.note("capacity", {
        event: "rtmp.refused",
        level: "warn",
        msg: `${what} refused: every connection is publishing`,
        reason: "max connections",
        remoteAddress,
        limit: this.maxConnections,
      });
      return false;
    }
    this.refusals.note("evicted", {
      event: "rtmp.evicted",
      level: "warn",
      msg: "RTMP server full: the oldest connection that has not published made room for a new one",
      connection: oldest.id,
      remoteAddress: oldest.remoteAddress,
      limit: this.maxConnections,
    });
    this.unpublished.delete(oldest);
    this.hooks.evict(oldest);
    return true;
  }

  /** An admitted connection is open: count it against its address (unless on probation) and start its publish deadline. */
  opened(connection: C, admitted: Admitted): void {
    const held: Held = { addressKey: null, deadline: null, settled: false, relay: null };
    this.held.set(connection, held);
    if (admitted.probation) {
      held.relay = "probation";
      this.probation++;
      this.uncounted++;
    } else {
      held.addressKey = clientAddressKey(connection.remoteAddress);
      // Only counted connections make room for others: one on probation may be a seat's relay.
      this.unpublished.add(connection);
      this.count(held.addressKey, +1);
    }
    if (this.publishDeadlineMs > 0) {
      // Not refreshed by incoming bytes: a peer trickling bytes cannot hold its place past it.
      held.deadline = setTimeout(() => {
        held.deadline = null;
        if (held.settled) return;
        this.log({ event: "rtmp.timeout", connection: connection.id, kind: "publish deadline", deadlineMs: this.publishDeadlineMs, remoteAddress: connection.remoteAddress });
        this.hooks.expire(connection);
      }, this.publishDeadlineMs);
    }
  }

  /**
   * `connection` publishes `streamKey` (which isLive now reports): it no
   * longer makes room for others. Answers the stream's bitrate meter (null: no cap).
   */
  published(connection: C, streamKey: string): BitrateMeter | null {
    this.settle(connection);
    return this.meterFor(streamKey);
  }

  /** The connection's session is over; its socket may linger a moment, still counted against its address. */
  ended(connection: C): void {
    this.settle(connection);
  }

  /** The socket is closed: the connection no longer counts. */
  closed(connection: C): void {
    const held = this.held.get(connection);
    if (!held) return;
    this.settle(connection);
    this.held.delete(connection);
    if (held.addressKey !== null) this.count(held.addressKey, -1);
    else this.uncounted--;
    if (held.relay === "probation") this.probation--;
  }

  /** Refuse everyone from now on; logs what the refusal bursts still owe. */
  stop(): void {
    this.stopping = true;
    this.refusals.stop();
  }

  /** Published or ended: neither evictable nor under the publish deadline any more. */
  private settle(connection: C): void {
    this.unpublished.delete(connection);
    const held = this.held.get(connection);
    if (!held) return;
    held.settled = true;
    if (held.deadline) clearTimeout(held.deadline);
    held.deadline = null;
  }

  private count(addressKey: string, delta: 1 | -1): void {
    const n = (this.perAddress.get(addressKey) ?? 0) + delta;
    if (n > 0) this.perAddress.set(addressKey, n);
    else this.perAddress.delete(addressKey);
  }

  /** Seats whose relay has not shown its token yet. */
  private waitingSeats(): number {
    let n = 0;
    for (const seat of this.seats.values()) if (!seat.connection) n++;
    return n;
  }

  private waitingSeat(token: string): SeatRecord | undefined {
    for (const seat of this.seats.values()) if (!seat.connection && sameToken(seat.token, token)) return seat;
    return undefined;
  }

  private meterFor(streamKey: string): BitrateMeter | null {
    if (this.maxBitrateKbps <= 0) return null;
    const now = performance.now();
    for (const [key, meter] of this.meters) if (!this.hooks.isLive(key) && meter.isFull(now)) this.meters.delete(key);
    let meter = this.meters.get(streamKey);
    if (!meter) this.meters.set(streamKey, (meter = new BitrateMeter(this.maxBitrateKbps, this.bitrateBurstSeconds, now)));
    return meter;
  }
}

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
