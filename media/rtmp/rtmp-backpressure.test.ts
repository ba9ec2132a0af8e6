/**
 * A slow sink (think: a disk that stalls) must hold the publisher back through
 * TCP instead of letting the server buffer the stream in memory.
 */
import { afterEach, expect, test } from "bun:test";
import type { MediaMessage } from "./publish-handlers.ts";
import { publish } from "./rtmp-publisher.ts";
import { fixtureTags, slowly, startTestServer, waitFor, withTimeout, type TestServer } from "./test-support.ts";

const tags = await fixtureTags();
let s: TestServer | null = null;
afterEach(async () => {
  await s?.server.stop();
  s = null;
});

/** The fixture `times` times over, timestamps continuing: ~0.7 MB per repetition. */
function* repeated(times: number): Generator<MediaMessage> {
  const span = Math.max(...tags.map((t) => t.timestamp)) + 40;
  for (let r = 0; r < times; r++) for (const t of tags) yield { ...t, timestamp: t.timestamp + r * span };
}

test("a stalled sink pauses the socket: buffered bytes stay bounded, nothing more is delivered", async () => {
  const highWater = 256 * 1024;
  s = await startTestServer({ readHighWaterBytes: highWater });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let inFlight = 0;
  let maxInFlight = 0;
  s.decide = (_request, sink) => {
    sink.delay = async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (sink.messages.length === 10) await gate;
      inFlight--;
    };
    return { ok: true, sink };
  };
  // ~58 MB: far more than loopback socket buffers hold. Autotuning lets a receive buffer grow to tcp_rmem's maximum
  // (32 MB here) and a send buffer to 4 MB; 15 repetitions (10.8 MB) were once all taken on a loaded machine.
  const times = 80;
  const publication = publish({ url: s.url(), tags: repeated(times), pace: "fast" });
  await publication.started;
  await waitFor(() => s!.sinks[0]?.messages.length === 10, 3000, "the gate");
  const sink = s.sinks[0]!;

  // Let the publisher push until TCP stops it.
  let sent = -1;
  await waitFor(
    () => {
      const stalled = publication.tagsSent === sent;
      sent = publication.tagsSent;
      return stalled && sent > 0;
    },
    5000,
    "the publisher to stall",
  );
  await Bun.sleep(100);
  const [stats] = s.server.stats();
  expect(stats!.paused).toBe(true);
  expect(sink.messages.length).toBe(10); // held at the gate, in order, one at a time
  // Bounded: the high-water mark, plus one socket read, plus one incomplete message.
  expect(stats!.bufferedBytes).toBeLessThan(highWater + 512 * 1024);
  expect(publication.tagsSent).toBeLessThan(tags.length * times);

  release();
  await withTimeout(publication.finished, 20_000, "publish after the gate opened");
  expect(await withTimeout(sink.closed, 2000, "onClose")).toBe("unpublish");
  expect(sink.messages.length).toBe(tags.length * times);
  expect(maxInFlight).toBe(1);
  // Order preserved across the pause: per-type timestamps never go back.
  const last = { audio: -1, video: -1, data: -1 };
  for (const m of sink.messages) {
    expect(m.timestamp).toBeGreaterThanOrEqual(last[m.type]);
    last[m.type] = m.timestamp;
  }
});

test("an always-async sink (every onMessage a promise) still receives everything in order", async () => {
  s = await startTestServer();
  s.decide = (_request, sink) => {
    sink.delay = () => Promise.resolve();
    return { ok: true, sink };
  };
  await publish({ url: s.url(), tags: repeated(2) }).finished;
  const sink = s.sinks[0]!;
  await sink.closed;
  expect(sink.messages.length).toBe(tags.length * 2);
});

test('a sink that throws closes the connection with reason "error"', async () => {
  s = await startTestServer();
  s.decide = (_request, sink) => {
    sink.delay = () => {
      if (sink.messages.length === 5) throw new Error("disk full");
    };
    return { ok: true, sink };
  };
  // Paced, so the publisher is still sending when the server drops it.
  const publication = publish({ url: s.url(), tags: slowly(repeated(3), 1) });
  await expect(withTimeout(publication.finished, 5000, "publisher")).rejects.toThrow();
  expect(await s.sinks[0]!.closed).toBe("error");
  expect(s.sinks[0]!.messages.length).toBe(5);
  expect(s.logs.some((l) => l.event === "rtmp.sink.error" && String(l.error).includes("disk full"))).toBe(true);
});
