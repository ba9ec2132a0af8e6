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
 */
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

/** Refusals of one kind from one address are logged once per this window (with a count after). */
const REFUSAL_LOG_WINDOW_MS = 10_000;
/** Distinct addresses tracked for refusal logging before further ones share one entry. */
const REFUSAL_LOG_MAX_KEYS = 1000;

interface Held {
  /** Who the per-IP cap counts this connection against (clientAddressKey). */
  addressKey: string;
  /** Closes the connection if it has not published by publishDeadlineMs after accept. */
  deadline: Timer | null;
}

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

  /** Whether a new connection from `remoteAddress` may be accepted; makes room when the server is full. */
  admit(remoteAddress: string): boolean {
    if (this.stopping) {
      this.log({ event: "rtmp.refused", reason: "stopping", remoteAddress });
      return false;
    }
    const addressKey = clientAddressKey(remoteAddress);
    if (this.maxConnectionsPerIp > 0 && (this.perAddress.get(addressKey) ?? 0) >= this.maxConnectionsPerIp) {
      this.refusals.note(`ip ${addressKey}`, {
        event: "rtmp.refused",
        level: "warn",
        msg: "RTMP connection refused: too many connections from one address",
        reason: "per-ip limit",
        remoteAddress,
        limit: this.maxConnectionsPerIp,
      });
      return false;
    }
    if (this.held.size < this.maxConnections) return true;
    const oldest = this.unpublished.values().next().value as C | undefined;
    if (!oldest) {
      this.refusals.note("capacity", {
        event: "rtmp.refused",
        level: "warn",
        msg: "RTMP connection refused: every connection is publishing",
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

  /** An admitted connection is open: count it against its address and start its publish deadline. */
  opened(connection: C): void {
    const addressKey = clientAddressKey(connection.remoteAddress);
    const held: Held = { addressKey, deadline: null };
    this.held.set(connection, held);
    this.unpublished.add(connection);
    this.perAddress.set(addressKey, (this.perAddress.get(addressKey) ?? 0) + 1);
    if (this.publishDeadlineMs > 0) {
      // Not refreshed by incoming bytes: a peer trickling bytes cannot hold its place past it.
      held.deadline = setTimeout(() => {
        held.deadline = null;
        if (!this.unpublished.has(connection)) return;
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
    const left = (this.perAddress.get(held.addressKey) ?? 1) - 1;
    if (left > 0) this.perAddress.set(held.addressKey, left);
    else this.perAddress.delete(held.addressKey);
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
    if (held?.deadline) clearTimeout(held.deadline);
    if (held) held.deadline = null;
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
