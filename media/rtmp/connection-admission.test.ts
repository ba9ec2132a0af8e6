/**
 * Seats (reserve) in the RTMP connection limits: a publisher relayed in from
 * loopback (WHIP) counts against its own client's address and the total,
 * its relay connection counts nowhere, and other loopback clients stay
 * limited. The policy alone, no sockets: rtmp-server.ts calls exactly these.
 */
import { afterEach, expect, test } from "bun:test";
import { type AdmissionOptions, ConnectionAdmission } from "./connection-admission.ts";

interface Conn {
  id: number;
  remoteAddress: string;
}

let nextId = 1;
const made: ConnectionAdmission<Conn>[] = [];
afterEach(() => {
  for (const a of made.splice(0)) a.stop();
});

function policy(options: AdmissionOptions) {
  const evicted: Conn[] = [];
  const logs: Record<string, unknown>[] = [];
  const a = new ConnectionAdmission<Conn>({ publishDeadlineMs: 0, ...options }, { evict: (c) => evicted.push(c), expire: () => undefined, isLive: () => false }, (e) => logs.push(e));
  made.push(a);
  /** A connection accepted and opened (null: refused on accept). */
  const connect = (remoteAddress: string) => {
    const admitted = a.admit(remoteAddress);
    if (!admitted) return null;
    const c = { id: nextId++, remoteAddress };
    a.opened(c, admitted);
    return c;
  };
  return { a, connect, evicted, logs };
}

test("a seat counts against its client's address like a connection; released, the place is free", () => {
  const { a, connect } = policy({ maxConnectionsPerIp: 1 });
  const first = a.reserve("203.0.113.5");
  if (!first.ok) throw new Error("seat refused");
  expect(a.reserve("203.0.113.5")).toEqual({ ok: false, reason: "per-ip limit", limit: 1 });
  // An RTMP encoder at the same address is refused too, another address is not.
  expect(connect("203.0.113.5")).toBeNull();
  expect(a.reserve("203.0.113.6").ok).toBe(true);
  first.seat.release();
  first.seat.release(); // idempotent
  expect(a.reserve("203.0.113.5").ok).toBe(true);
});

test("the relay's loopback connection is not counted; other loopback publishers stay limited", () => {
  const { a, connect } = policy({ maxConnectionsPerIp: 1 });
  // A local ffmpeg publishes: 127.0.0.1 has its one place taken.
  const local = connect("127.0.0.1")!;
  expect(a.publishing(local, null)).toBe(true);
  a.published(local, "k1");
  expect(connect("127.0.0.1")).toBeNull();

  const r = a.reserve("203.0.113.5");
  if (!r.ok) throw new Error("seat refused");
  const relay = connect("127.0.0.1");
  expect(relay).not.toBeNull();
  expect(a.publishing(relay!, r.seat.token)).toBe(true);
  a.published(relay!, "k2");
  // The seat has its relay: no loopback newcomer is let in on its account.
  expect(connect("127.0.0.1")).toBeNull();
  // The local publisher leaves: 127.0.0.1's place is free again, the relay never held it.
  a.closed(local);
  expect(connect("127.0.0.1")).not.toBeNull();
});

test("a loopback stranger let in on probation is counted at its publish and refused when its address is full; the relay still gets in", () => {
  const { a, connect, logs } = policy({ maxConnectionsPerIp: 1 });
  const local = connect("127.0.0.1")!;
  a.published(local, "k1");
  const r = a.reserve("203.0.113.5");
  if (!r.ok) throw new Error("seat refused");
  const stranger = connect("127.0.0.1")!;
  expect(stranger).not.toBeNull(); // on probation: it might have been the relay
  expect(a.publishing(stranger, "not-a-token")).toBe(false);
  expect(logs.some((l) => l.event === "rtmp.refused" && l.reason === "per-ip limit" && l.remoteAddress === "127.0.0.1")).toBe(true);
  a.closed(stranger);
  const relay = connect("127.0.0.1")!;
  expect(a.publishing(relay, r.seat.token)).toBe(true);
  // A token is good once.
  const copy = connect("127.0.0.1");
  expect(copy).toBeNull();
});

test("a relay counted on accept (no seat waiting for it then) is uncounted when it shows its token", () => {
  const { a, connect } = policy({ maxConnectionsPerIp: 2 });
  const early = connect("127.0.0.1")!; // no seat yet: counted against 127.0.0.1
  const r = a.reserve("203.0.113.5");
  if (!r.ok) throw new Error("seat refused");
  const prob = connect("127.0.0.1")!; // on probation for the seat
  expect(a.publishing(early, r.seat.token)).toBe(true);
  // The probation one is a stranger after all: counted now (127.0.0.1 has room: the relay left its count).
  expect(a.publishing(prob, null)).toBe(true);
  expect(connect("127.0.0.1")).not.toBeNull();
  expect(connect("127.0.0.1")).toBeNull();
});

test("the total: a seat and its relay take one place; a full server refuses a seat", () => {
  const { a, connect } = policy({ maxConnections: 2, maxConnectionsPerIp: 0 });
  const one = connect("198.51.100.1")!;
  a.published(one, "k1");
  const r = a.reserve("203.0.113.5");
  if (!r.ok) throw new Error("seat refused");
  const relay = connect("127.0.0.1")!;
  expect(a.publishing(relay, r.seat.token)).toBe(true);
  a.published(relay, "k2");
  // Two places: the publisher and the seat (its relay not counted again); everyone publishes, so nobody makes room.
  expect(connect("198.51.100.2")).toBeNull();
  expect(a.reserve("203.0.113.6")).toEqual({ ok: false, reason: "max connections", limit: 2 });
  r.seat.release();
  expect(a.reserve("203.0.113.6").ok).toBe(true);
});

test("a seat makes room as a connection does: the oldest connection that has not published is evicted", () => {
  const { a, connect, evicted } = policy({ maxConnections: 1, maxConnectionsPerIp: 0 });
  const idle = connect("198.51.100.1")!;
  expect(a.reserve("203.0.113.5").ok).toBe(true);
  expect(evicted).toEqual([idle]);
});
