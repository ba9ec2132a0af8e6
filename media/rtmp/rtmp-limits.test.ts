/**
 * Fair shares of the RTMP port: the per-IP connection cap, the deadline from
 * accept to publish, room-making when the server is full, and the ingest
 * bitrate cap. Client IPs are loopback addresses 127.0.0.2, 127.0.0.3, …
 * (the server sees each as a different remote address).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { RtmpConnectionClosedError } from "./errors.ts";
import { publish } from "./rtmp-publisher.ts";
import { countByType, fixtureTags, looped, padWithFiller, slowly, startTestServer, Trickler, waitFor, withTimeout, type TestServer } from "./test-support.ts";

const tags = await fixtureTags();
let current: TestServer | null = null;
let tricklers: Trickler[] = [];

async function server(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  current = await startTestServer(options);
  return current;
}

/** `count` tricklers spread round-robin over `addresses` loopback IPs from 127.0.0.`first` on. */
async function trickle(port: number, count: number, addresses: number, options: { intervalMs?: number; handshake?: boolean } = {}, first = 2): Promise<Trickler[]> {
  const opened: Trickler[] = [];
  // In batches: 200 simultaneous connects are fine, but keep the accept queue short on a busy machine.
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) => Trickler.open(port, `127.0.0.${first + ((i + j) % addresses)}`, options));
    opened.push(...(await Promise.all(batch)));
  }
  tricklers.push(...opened);
  return opened;
}

afterEach(async () => {
  for (const t of tricklers) t.destroy();
  tricklers = [];
  await current?.server.stop();
  current = null;
});

const warnings = (s: TestServer, event: string) => s.logs.filter((l) => l.event === event && l.level === "warn");

describe("per-IP connection cap", () => {
  test("the 21st connection from one IP is closed at once, logged once per burst; other IPs are unaffected", async () => {
    const s = await server({ publishDeadlineMs: 0 });
    const first20 = await trickle(s.server.port, 20, 1); // all from 127.0.0.2
    await waitFor(() => first20.every((t) => t.handshaken), 5000, "the first 20 accepted");
    const extra = await Promise.all(Array.from({ length: 5 }, () => Trickler.open(s.server.port, "127.0.0.2")));
    tricklers.push(...extra);
    await withTimeout(Promise.all(extra.map((t) => t.closed)), 2000, "connections 21-25 closed on accept");
    expect(extra.every((t) => !t.handshaken)).toBe(true);
    expect(first20.some((t) => t.isClosed)).toBe(false);

    // Five refusals, one warning naming the address (the rest are counted, not logged one by one).
    const refused = warnings(s, "rtmp.refused");
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ reason: "per-ip limit", remoteAddress: "127.0.0.2", limit: 20 });
    expect(String(refused[0]!.msg)).toContain("too many connections from one address");

    // Another IP gets its own 20, and a publisher from a third publishes normally.
    const other = await trickle(s.server.port, 20, 1, {}, 3); // all from 127.0.0.3
    await waitFor(() => other.every((t) => t.handshaken), 5000, "another IP accepted");
    const summary = await publish({ url: s.url("OTHER"), tags: tags.slice(0, 80) }).finished;
    expect(summary.tagsSent).toBe(80);

    // A freed place can be taken again.
    first20[0]!.destroy();
    await waitFor(() => s.server.stats().filter((c) => c.remoteAddress === "127.0.0.2").length === 19, 2000, "one place freed");
    const again = await Trickler.open(s.server.port, "127.0.0.2");
    tricklers.push(again);
    await waitFor(() => again.handshaken, 2000, "accepted again");
  });
});

describe("publish deadline", () => {
  test("bytes trickled after the handshake do not extend it; a publisher that made it stays past it", async () => {
    const s = await server({ publishDeadlineMs: 800, idleTimeoutMs: 30_000, handshakeTimeoutMs: 30_000 });
    const [trickler] = await trickle(s.server.port, 1, 1, { intervalMs: 100 });
    const publication = publish({ url: s.url("STAYS"), tags: slowly(tags.slice(0, 100), 20) });
    await publication.started;
    await withTimeout(trickler!.closed, 3000, "trickler closed at the deadline");
    // Not before the deadline (a lower bound only: the machine may be slow, never fast).
    expect(trickler!.closedAt! - trickler!.openedAt).toBeGreaterThanOrEqual(750);
    expect(s.logs.some((l) => l.event === "rtmp.timeout" && l.kind === "publish deadline")).toBe(true);
    const summary = await withTimeout(publication.finished, 10_000, "publisher");
    expect(summary).toMatchObject({ ended: "completed", tagsSent: 100 });
    expect(await s.sinkByKey.get("STAYS")!.closed).toBe("unpublish");
  });

  test("a socket that never completes the handshake is closed by the deadline too", async () => {
    const s = await server({ publishDeadlineMs: 500, handshakeTimeoutMs: 30_000 });
    const [slow] = await trickle(s.server.port, 1, 1, { intervalMs: 50, handshake: false });
    await withTimeout(slow!.closed, 3000, "closed at the deadline");
  });
});

describe("regression: 200 trickling sockets from several IPs", () => {
  test("a real publisher still gets in and publishes while they are connected; all are closed after the deadline", async () => {
    // Without the limits: 120 sockets fill maxConnections, every later one (the publisher) is dropped on accept,
    // and trickled bytes keep the idle timeout from ever closing them.
    const s = await server({ maxConnections: 120, publishDeadlineMs: 1500, idleTimeoutMs: 30_000 });
    const crowd = await trickle(s.server.port, 200, 5, { intervalMs: 300 }); // 40 per IP
    await waitFor(() => crowd.filter((t) => t.handshaken).length === 100, 5000, "20 per IP accepted");
    await waitFor(() => crowd.filter((t) => t.isClosed).length === 100, 5000, "the other 20 per IP dropped on accept");
    expect(warnings(s, "rtmp.refused").length).toBeLessThanOrEqual(5); // one per IP and burst

    const publication = publish({ url: s.url("REAL"), tags: slowly(tags, 8) });
    await publication.started;
    // Published while the 100 accepted tricklers were still connected.
    expect(crowd.filter((t) => t.handshaken && !t.isClosed)).toHaveLength(100);

    await withTimeout(Promise.all(crowd.map((t) => t.closed)), 6000, "every trickler closed");
    for (const t of crowd.filter((t) => t.handshaken)) expect(t.closedAt! - t.openedAt).toBeGreaterThanOrEqual(1400);
    const summary = await withTimeout(publication.finished, 20_000, "publisher");
    expect(summary).toMatchObject({ ended: "completed", tagsSent: tags.length });
    const sink = s.sinkByKey.get("REAL")!;
    expect(await sink.closed).toBe("unpublish");
    expect(countByType(sink.messages)).toEqual(countByType(tags));
    expect(s.server.connections()).toBe(0);
  }, 40_000);
});

describe("a full server", () => {
  test("a newcomer replaces the oldest connection that has not published", async () => {
    const s = await server({ maxConnections: 10, publishDeadlineMs: 0 });
    const crowd = await trickle(s.server.port, 10, 10); // one per IP
    await waitFor(() => crowd.every((t) => t.handshaken), 5000, "server full");
    const summary = await publish({ url: s.url("NEWCOMER"), tags: tags.slice(0, 50) }).finished;
    expect(summary.tagsSent).toBe(50);
    expect(crowd[0]!.isClosed).toBe(true); // the oldest made room
    expect(crowd.slice(1).some((t) => t.isClosed)).toBe(false);
    expect(warnings(s, "rtmp.evicted")).toHaveLength(1);
  });

  test("publishers are never displaced: with every connection publishing, a newcomer is dropped", async () => {
    const s = await server({ maxConnections: 2 });
    const pubs = ["A", "B"].map((key) => publish({ url: s.url(key), tags: slowly(tags.slice(0, 60), 10) }));
    await Promise.all(pubs.map((p) => p.started));
    const late = await Trickler.open(s.server.port, "127.0.0.9");
    tricklers.push(late);
    await withTimeout(late.closed, 2000, "newcomer dropped");
    expect(warnings(s, "rtmp.refused")[0]).toMatchObject({ reason: "max connections", remoteAddress: "127.0.0.9" });
    for (const p of pubs) expect((await p.finished).tagsSent).toBe(60);
  });
});

describe("ingest bitrate cap", () => {
  test("a publisher at 4x the cap is disconnected with the reason logged (tagged by authorize); one under it is not", async () => {
    const s = await server({ maxBitrateKbps: 1500 });
    s.decide = (request, sink) => ({ ok: true, sink, logTags: { stream_id: `str_${request.streamKey}` } });
    // The fixture is ~0.96 Mbit/s; 30 kB of filler per video frame (25 fps) makes it ~7 Mbit/s.
    const heavy = publish({ url: s.url("HEAVY"), tags: looped(padWithFiller(tags, 30_000), 3), pace: "realtime" });
    const light = publish({ url: s.url("LIGHT"), tags: tags.filter((t) => t.timestamp < 3000), pace: "realtime" });
    await heavy.started;
    expect(await withTimeout(s.sinkByKey.get("HEAVY")!.closed, 10_000, "heavy publisher cut")).toBe("bitrate");
    await expect(withTimeout(heavy.finished, 5000, "heavy publisher")).rejects.toBeInstanceOf(RtmpConnectionClosedError);

    const [exceeded] = warnings(s, "rtmp.bitrate.exceeded");
    expect(exceeded).toMatchObject({ stream_id: "str_HEAVY", limitKbps: 1500 });
    expect(String(exceeded!.msg)).toContain("bitrate above the limit");
    expect(Number(exceeded!.measuredKbps)).toBeGreaterThan(1500);
    expect(s.logs.find((l) => l.event === "rtmp.close" && l.reason === "bitrate")).toMatchObject({ stream_id: "str_HEAVY" });

    const summary = await withTimeout(light.finished, 15_000, "light publisher");
    expect(summary.ended).toBe("completed");
    expect(await s.sinkByKey.get("LIGHT")!.closed).toBe("unpublish");
    expect(warnings(s, "rtmp.bitrate.exceeded")).toHaveLength(1);
  }, 30_000);

  test("reconnecting does not reset the cap: the stream key keeps its meter", async () => {
    const s = await server({ maxBitrateKbps: 1000 });
    const fast = padWithFiller(tags, 20_000);
    await publish({ url: s.url("AGAIN"), tags: fast }).finished.catch(() => undefined);
    expect(await s.sinks[0]!.closed).toBe("bitrate");
    // At once again: the bucket is still empty, so the first large messages are over the cap.
    await publish({ url: s.url("AGAIN"), tags: fast }).finished.catch(() => undefined);
    const second = s.sinks[1]!;
    expect(await second.closed).toBe("bitrate");
    const firstBytes = s.sinks[0]!.messages.reduce((n, m) => n + m.payload.length, 0);
    const secondBytes = second.messages.reduce((n, m) => n + m.payload.length, 0);
    expect(secondBytes).toBeLessThan(firstBytes / 2);
  });
});
