import { afterEach, describe, expect, test } from "bun:test";
import { encodeAmf0 } from "./amf0.ts";
import { RtmpConnectionClosedError, RtmpPublishRejectedError } from "./errors.ts";
import { ChunkWriter } from "./chunk-writer.ts";
import { MessageType, type RtmpMessage } from "./message-types.ts";
import type { MediaMessage } from "./publish-handlers.ts";
import { publish } from "./rtmp-publisher.ts";
import { countByType, fixtureTags, RawClient, slowly, startTestServer, waitFor, withTimeout, type TestServer } from "./test-support.ts";

const tags = await fixtureTags();
/** A message as a fmt 0 chunk (fresh writer: no header compression), so copies can be concatenated. */
const encodeOnce = (message: RtmpMessage) => new ChunkWriter().encode(message);
const fileCounts = countByType(tags);
let current: TestServer | null = null;

async function server(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  current = await startTestServer(options);
  return current;
}

afterEach(async () => {
  await current?.server.stop();
  current = null;
});

describe("publishing with our publisher", () => {
  for (const form of ["ffmpeg", "obs"] as const) {
    test(`${form} URL form: authorize sees key + query, every tag arrives intact, unpublish closes`, async () => {
      const s = await server();
      const publication = publish({ url: s.url("KEY123", "?sig=abc"), form, tags, pace: "fast" });
      const started = await publication.started;
      expect(started.code).toBe("NetStream.Publish.Start");
      const summary = await publication.finished;
      expect(summary).toMatchObject({ ended: "completed", tagsSent: tags.length });

      expect(s.requests).toHaveLength(1);
      const request = s.requests[0]!;
      expect(request.app).toBe("live");
      expect(request.streamKey).toBe("KEY123");
      expect(request.query.toString()).toBe("sig=abc");
      expect(request.remoteAddress).toContain("127.0.0.1");
      expect(request.publishType).toBe("live");

      const sink = s.sinks[0]!;
      expect(await withTimeout(sink.closed, 2000, "onClose")).toBe("unpublish");
      expect(sink.closeCalls).toBe(1);
      expect(countByType(sink.messages)).toEqual(fileCounts);
      // Same order, timestamps and bytes as the FLV file; data without the @setDataFrame wrapper.
      expect(sink.messages.length).toBe(tags.length);
      sink.messages.forEach((m, i) => {
        const t = tags[i]!;
        expect(m.type).toBe(t.type);
        expect(m.timestamp).toBe(t.timestamp);
        expect(Buffer.compare(m.payload, t.payload)).toBe(0);
      });
      const firstVideo = sink.messages.find((m) => m.type === "video")!;
      expect(firstVideo.payload[0]).toBe(0x17); // keyframe, AVC
      expect(firstVideo.payload[1]).toBe(0); // AVC sequence header
      await waitFor(() => s.server.connections() === 0, 2000, "connection to close");
    });
  }

  test("timestamps beyond 24 bits (extended timestamps) arrive unchanged", async () => {
    const s = await server();
    const base = 0xfffff0; // crosses the 0xffffff boundary
    const shifted: MediaMessage[] = tags.slice(0, 60).map((t) => ({ ...t, timestamp: t.timestamp + base }));
    await publish({ url: s.url(), tags: shifted }).finished;
    const sink = s.sinks[0]!;
    await sink.closed;
    expect(sink.messages.map((m) => m.timestamp)).toEqual(shifted.map((t) => t.timestamp));
  });

  test("large messages span many chunks", async () => {
    const s = await server();
    const big = new Uint8Array(1_500_000).map((_, i) => i % 251);
    await publish({ url: s.url(), tags: [tags.find((t) => t.type === "video")!, { type: "video", timestamp: 40, payload: big }] }).finished;
    await s.sinks[0]!.closed;
    expect(Buffer.compare(s.sinks[0]!.messages[1]!.payload, big)).toBe(0);
  });
});

describe("refusal", () => {
  test("BadName: publisher rejects with the reason, no sink, no media", async () => {
    const s = await server();
    s.decide = () => ({ ok: false, reason: "bad signature" });
    const publication = publish({ url: s.url(), tags, pace: "fast" });
    const error = await publication.started.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RtmpPublishRejectedError);
    expect((error as RtmpPublishRejectedError).code).toBe("NetStream.Publish.BadName");
    expect((error as RtmpPublishRejectedError).description).toBe("bad signature");
    await expect(publication.finished).rejects.toBeInstanceOf(RtmpPublishRejectedError);
    expect(publication.tagsSent).toBe(0);
    expect(s.requests).toHaveLength(1);
    expect(s.sinks).toHaveLength(0);
    await waitFor(() => s.server.connections() === 0, 2000, "refused connection to close");
  });

  test("Rejected status and a throwing authorize both refuse", async () => {
    const s = await server();
    s.decide = () => ({ ok: false, reason: "already live", status: "Rejected" });
    await expect(publish({ url: s.url(), tags }).started).rejects.toMatchObject({ code: "NetStream.Publish.Rejected", description: "already live" });
    s.decide = () => {
      throw new Error("database down");
    };
    await expect(publish({ url: s.url(), tags }).started).rejects.toMatchObject({ code: "NetStream.Publish.Rejected", description: "internal error" });
    expect(s.sinks).toHaveLength(0);
  });

  test("an empty stream key is refused without asking authorize", async () => {
    const s = await server();
    const client = await RawClient.connect(s.server.port);
    await client.connectApp("live");
    client.command(["createStream", 2, null]);
    client.command(["publish", 3, null, "", "live"], 1);
    await withTimeout(client.closed, 2000, "close");
    expect(client.receivedText("NetStream.Publish.BadName")).toBe(true);
    expect(s.requests).toHaveLength(0);
  });

  test("play is refused: publish-only", async () => {
    const s = await server();
    const client = await RawClient.connect(s.server.port);
    await client.connectApp("live");
    client.command(["createStream", 2, null]);
    client.command(["play", 3, null, "KEY123"], 1);
    await withTimeout(client.closed, 2000, "close");
    expect(client.receivedText("NetConnection.Connect.Success")).toBe(true);
    expect(client.receivedText("NetStream.Play.Failed")).toBe(true);
  });

  test('a sink returned after the encoder left gets onClose("disconnect")', async () => {
    const s = await server();
    let release!: () => void;
    s.decide = async (_r, sink) => {
      await new Promise<void>((resolve) => (release = resolve));
      return { ok: true, sink };
    };
    const publication = publish({ url: s.url(), tags });
    await waitFor(() => s.requests.length === 1, 2000, "authorize");
    publication.abort();
    await waitFor(() => s.server.connections() === 0, 2000, "disconnect");
    release();
    await waitFor(() => s.sinks.length === 1, 2000, "sink");
    expect(await withTimeout(s.sinks[0]!.closed, 1000, "onClose")).toBe("disconnect");
    expect(s.sinks[0]!.messages).toHaveLength(0);
  });
});

describe("ending a publish", () => {
  test('publisher killed mid-stream → onClose("disconnect") quickly', async () => {
    const s = await server();
    const publication = publish({ url: s.url(), tags: slowly(tags, 2) });
    await publication.started;
    await waitFor(() => (s.sinks[0]?.messages.length ?? 0) > 20, 3000, "some media");
    const killedAt = Date.now();
    publication.abort();
    expect(await withTimeout(s.sinks[0]!.closed, 1000, "onClose")).toBe("disconnect");
    expect(Date.now() - killedAt).toBeLessThan(500);
    expect((await publication.finished).ended).toBe("aborted");
  });

  test('kick() ends the publisher; the sink hears "kicked"', async () => {
    const s = await server();
    const publication = publish({ url: s.url("KICKME"), tags: slowly(tags, 2) });
    await publication.started;
    expect(s.server.kick("nobody")).toBe(false);
    expect(s.server.kick("KICKME")).toBe(true);
    expect(await withTimeout(s.sinks[0]!.closed, 1000, "onClose")).toBe("kicked");
    await expect(withTimeout(publication.finished, 3000, "publisher")).rejects.toBeInstanceOf(RtmpConnectionClosedError);
    expect(s.server.kick("KICKME")).toBe(false);
  });

  test('idle timeout: no bytes for idleTimeoutMs → onClose("timeout")', async () => {
    const s = await server({ idleTimeoutMs: 300 });
    async function* stallAfterThree(): AsyncGenerator<MediaMessage> {
      yield* tags.slice(0, 3);
      await new Promise(() => {}); // an encoder that hangs
    }
    const publication = publish({ url: s.url(), tags: stallAfterThree() });
    await publication.started;
    const startedAt = Date.now();
    expect(await withTimeout(s.sinks[0]!.closed, 2000, "onClose")).toBe("timeout");
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(250);
    expect(s.sinks[0]!.messages).toHaveLength(3);
    publication.abort();
  });

  test("handshake timeout: connect and send nothing (or half a C1)", async () => {
    const s = await server({ handshakeTimeoutMs: 200, idleTimeoutMs: 10_000 });
    const silent = await RawClient.connect(s.server.port);
    const partial = await RawClient.connect(s.server.port);
    partial.send(new Uint8Array([3, 0, 0, 0, 0]));
    const t0 = Date.now();
    await withTimeout(Promise.all([silent.closed, partial.closed]), 2000, "handshake timeout");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    expect(s.logs.filter((l) => l.event === "rtmp.timeout" && l.kind === "handshake")).toHaveLength(2);
  });

  test("stop() kicks publishers and closes every connection", async () => {
    const s = await server();
    const publication = publish({ url: s.url(), tags: slowly(tags, 5) });
    await publication.started;
    const idle = await RawClient.connect(s.server.port);
    expect(s.server.connections()).toBe(2);
    await s.server.stop();
    expect(s.server.connections()).toBe(0);
    expect(await s.sinks[0]!.closed).toBe("kicked");
    await withTimeout(idle.closed, 1000, "idle client closed");
    await expect(publication.finished).rejects.toBeInstanceOf(RtmpConnectionClosedError);
    current = null;
  });
});

describe("publisher client", () => {
  test("close() mid-stream unpublishes cleanly", async () => {
    const s = await server();
    const publication = publish({ url: s.url(), tags: slowly(tags, 2) });
    await publication.started;
    await waitFor(() => (s.sinks[0]?.messages.length ?? 0) >= 20, 3000, "some media");
    const summary = await withTimeout(publication.close(), 3000, "close()");
    expect(summary.ended).toBe("closed");
    expect(summary.tagsSent).toBeLessThan(tags.length);
    expect(await withTimeout(s.sinks[0]!.closed, 1000, "onClose")).toBe("unpublish");
    expect(s.sinks[0]!.messages.length).toBe(summary.tagsSent);
  });

  test("pace 'realtime' sends at the tags' timestamps", async () => {
    const s = await server();
    const firstSecond = tags.filter((t) => t.timestamp <= 600);
    const t0 = performance.now();
    await publish({ url: s.url(), tags: firstSecond, pace: "realtime" }).finished;
    const elapsed = performance.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(550);
    expect(elapsed).toBeLessThan(1500);
  });

  test("a stalled tag source does not keep abort() from finishing", async () => {
    const s = await server();
    async function* stall(): AsyncGenerator<MediaMessage> {
      yield tags[0]!;
      await new Promise(() => {});
    }
    const publication = publish({ url: s.url(), tags: stall() });
    await publication.started;
    publication.abort();
    expect((await withTimeout(publication.finished, 1000, "finished")).ended).toBe("aborted");
  });
});

describe("resource limits", () => {
  test("beyond maxConnections a newcomer replaces the oldest connection that has not published (rtmp-limits.test.ts has more)", async () => {
    const s = await server({ maxConnections: 1 });
    const first = await RawClient.connect(s.server.port);
    const second = await RawClient.connect(s.server.port);
    await withTimeout(first.closed, 1000, "first connection evicted");
    expect(second.isClosed).toBe(false);
    await waitFor(() => s.server.connections() === 1, 1000, "one connection left");
    expect(s.logs.some((l) => l.event === "rtmp.evicted")).toBe(true);
  });

  test("a peer that provokes replies but never reads them is dropped", async () => {
    const s = await server();
    const client = await RawClient.connect(s.server.port);
    await client.connectApp("live");
    await waitFor(() => client.receivedText("NetConnection.Connect.Success"), 2000, "connect");
    client.pause();
    // Each unknown command with a transaction id draws a ~100-byte _error: cheap to provoke.
    const call = { chunkStreamId: 3, typeId: MessageType.commandAmf0, streamId: 0, timestamp: 0, payload: encodeAmf0("x", 1, null) };
    const batch = new Uint8Array(Buffer.concat(Array.from({ length: 2000 }, () => Buffer.from(encodeOnce(call)))));
    // Keep the byte stream aligned across partial writes; a paused socket learns of the close through write().
    let offset = 0;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const n = client.send(batch.subarray(offset));
      if (n < 0) break;
      offset = (offset + n) % batch.length;
      if (n === 0 || offset !== 0) await Bun.sleep(1);
    }
    await waitFor(() => s.server.connections() === 0, 2000, "flooding client dropped");
    expect(s.logs.some((l) => l.error === "peer does not read our replies")).toBe(true);
  });
});

describe("protocol details", () => {
  test("connect reply carries window, bandwidth and chunk size; ping is answered", async () => {
    const s = await server();
    const client = await RawClient.connect(s.server.port);
    await client.connectApp("live");
    // Ping request (user control event 6) with a timestamp.
    client.sendMessage({ chunkStreamId: 2, typeId: MessageType.userControl, streamId: 0, timestamp: 0, payload: new Uint8Array([0, 6, 0, 0, 0x12, 0x34]) });
    await waitFor(() => client.receivedText("NetConnection.Connect.Success"), 2000, "connect _result");
    const hex = Buffer.from(client.received).toString("hex");
    // csid 2, ts 0, length 4, type 5 (Window Ack Size), stream 0, 5,000,000
    expect(hex).toContain("02" + "000000" + "000004" + "05" + "00000000" + "004c4b40");
    // Set Peer Bandwidth 5,000,000 dynamic (fmt 1: same chunk stream, new length/type)
    expect(hex).toContain("42" + "000000" + "000005" + "06" + "004c4b40" + "02");
    // Set Chunk Size 4096
    expect(hex).toContain("42" + "000000" + "000004" + "01" + "00001000");
    await waitFor(() => Buffer.from(client.received).toString("hex").includes("000700001234"), 2000, "ping response");
    client.close();
  });

  test("acknowledges according to the window the peer announced", async () => {
    const s = await server();
    s.decide = (_r, sink) => ({ ok: true, sink });
    const client = await RawClient.connect(s.server.port);
    await client.connectApp("live");
    client.sendMessage({ chunkStreamId: 2, typeId: MessageType.windowAckSize, streamId: 0, timestamp: 0, payload: new Uint8Array([0, 0, 0x10, 0]) }); // 4096
    client.command(["createStream", 2, null]);
    client.command(["publish", 3, null, "KEY?sig=1", "live"], 1);
    await waitFor(() => client.receivedText("NetStream.Publish.Start"), 2000, "publish start");
    const before = client.received.length;
    client.sendMessage({ chunkStreamId: 4, typeId: MessageType.audio, streamId: 1, timestamp: 0, payload: new Uint8Array(10_000) });
    // An Acknowledgement: chunk stream 2, message type 3 (offset 7 in a fmt 0 or 1 header).
    await waitFor(() => client.received.length > before, 2000, "acknowledgement");
    expect(client.received[before]! & 0x3f).toBe(2);
    expect(client.received[before + 7]).toBe(0x03);
    client.close();
  });
});
