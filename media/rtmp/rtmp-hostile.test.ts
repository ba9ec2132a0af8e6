/**
 * Hostile and broken peers: each must lose only its own connection while a
 * good publish on the same server carries on untouched.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { encodeAmf0 } from "./amf0.ts";
import { MessageType } from "./message-types.ts";
import { publish } from "./rtmp-publisher.ts";
import { countByType, fixtureTags, RawClient, slowly, startTestServer, withTimeout, type TestServer } from "./test-support.ts";

const tags = await fixtureTags();
let s: TestServer;

beforeAll(async () => {
  // Every client here comes from 127.0.0.1 (the fuzz test opens 30 at once): lift the per-IP cap (rtmp-limits.test.ts tests it).
  s = await startTestServer({ idleTimeoutMs: 1000, handshakeTimeoutMs: 1000, maxMessageBytes: 4 * 1024 * 1024, maxConnectionsPerIp: 100 });
});
afterAll(async () => {
  await s.server.stop();
});

function seeded(seed: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed * 2654435761;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** `why` must match the server's log of why it closed the connection. */
type Attack = { name: string; why: RegExp; run: (client: RawClient) => Promise<void> | void };

const u24 = (v: number) => [(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
const control = (type: number, body: number[]) => new Uint8Array([0x02, 0, 0, 0, ...u24(body.length), type, 0, 0, 0, 0, ...body]);

const attacks: Attack[] = [
  {
    name: "random bytes instead of a handshake",
    why: /version byte 0x47/,
    run: (c) => void c.send(new Uint8Array([0x47, ...seeded(1, 4000)])),
  },
  {
    name: "an HTTP request",
    why: /version byte 0x47/,
    run: (c) => void c.send(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n")),
  },
  {
    // Passes as C0/C1/C2, then the random tail is parsed as chunks (seeded: same failure each run).
    name: "version 3 then random bytes",
    why: /chunk stream 41 starts with a fmt 3 header/,
    run: (c) => void c.send(new Uint8Array([3, ...seeded(2, 20_000)])),
  },
  {
    name: "absurd message length (16 MiB > maxMessageBytes)",
    why: /16777215 bytes exceeds/,
    run: async (c) => {
      await c.handshake();
      c.send(new Uint8Array([0x04, 0, 0, 0, 0xff, 0xff, 0xff, 9, 1, 0, 0, 0, 1, 2, 3]));
    },
  },
  {
    name: "Set Chunk Size 0",
    why: /invalid chunk size 0/,
    run: async (c) => {
      await c.handshake();
      c.send(control(1, [0, 0, 0, 0]));
    },
  },
  {
    name: "Set Chunk Size with the top bit set",
    why: /invalid chunk size 2147483648/,
    run: async (c) => {
      await c.handshake();
      c.send(control(1, [0x80, 0, 0, 0]));
    },
  },
  {
    name: "an unknown message type",
    why: /unknown message type 127/,
    run: async (c) => {
      await c.handshake();
      c.send(control(0x7f, [1, 2, 3]));
    },
  },
  {
    name: "hundreds of chunk streams",
    why: /more than 64 chunk streams/,
    run: async (c) => {
      await c.handshake();
      const parts: number[] = [];
      // Half a 200-byte message (one 128-byte chunk) on each: every stream holds state.
      const half = new Array(128).fill(7);
      for (let csid = 3; csid < 63; csid++) parts.push(csid, 0, 0, 0, ...u24(200), 9, 1, 0, 0, 0, ...half);
      for (let csid = 64; csid < 300; csid++) parts.push(0, csid - 64, 0, 0, 0, ...u24(200), 9, 1, 0, 0, 0, ...half);
      c.send(new Uint8Array(parts));
    },
  },
  {
    name: "fmt 3 on a chunk stream never opened",
    why: /chunk stream 9 starts with a fmt 3/,
    run: async (c) => {
      await c.handshake();
      c.send(new Uint8Array([0xc9, 1, 2, 3]));
    },
  },
  {
    name: "an AMF0 type outside the supported set (Date) in connect",
    why: /unsupported AMF0 type 0x0b/,
    run: async (c) => {
      await c.handshake();
      const body = [...encodeAmf0("connect", 1), 0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
      c.send(new Uint8Array([0x03, 0, 0, 0, ...u24(body.length), MessageType.commandAmf0, 0, 0, 0, 0, ...body]));
    },
  },
  {
    name: "publish before connect",
    why: /publish before connect/,
    run: async (c) => {
      await c.handshake();
      c.command(["publish", 1, null, "KEY123", "live"], 1);
    },
  },
  {
    name: "media before publish",
    why: /video message before an accepted publish/,
    run: async (c) => {
      await c.connectApp();
      c.sendMessage({ chunkStreamId: 4, typeId: MessageType.video, streamId: 1, timestamp: 0, payload: new Uint8Array(100) });
    },
  },
  {
    name: "createStream flood",
    why: /too many createStream/,
    run: async (c) => {
      await c.connectApp();
      for (let i = 0; i < 50; i++) c.command(["createStream", 2 + i, null]);
    },
  },
  {
    name: "random chunk bytes after a valid connect",
    why: /chunk stream 49 starts with a fmt 2 header/,
    run: async (c) => {
      await c.connectApp();
      c.send(seeded(3, 50_000));
    },
  },
  {
    name: "silence after the handshake",
    why: /idle/,
    run: async (c) => {
      await c.handshake();
    },
  },
];

describe("hostile peers", () => {
  test("each bad connection is closed; a concurrent good publish is unaffected", async () => {
    const good = publish({ url: s.url("GOOD"), tags: slowly(tags, 1) });
    await good.started;
    const clients = await Promise.all(attacks.map(() => RawClient.connect(s.server.port)));
    await Promise.all(attacks.map((attack, i) => attack.run(clients[i]!)));
    const results = await Promise.all(
      clients.map((client, i) =>
        withTimeout(client.closed, 3000, attacks[i]!.name).then(
          () => "closed",
          (e: Error) => e.message,
        ),
      ),
    );
    expect(results).toEqual(attacks.map(() => "closed"));

    await withTimeout(good.finished, 10_000, "good publish");
    const sink = s.sinkByKey.get("GOOD")!;
    expect(await withTimeout(sink.closed, 2000, "good onClose")).toBe("unpublish");
    expect(countByType(sink.messages)).toEqual(countByType(tags));
    // Each connection was closed for the intended reason (logged, never thrown out of the server).
    const reasons = s.logs.filter((l) => l.event === "rtmp.protocol.error" || l.event === "rtmp.timeout").map((l) => String(l.error ?? l.kind));
    for (const attack of attacks) expect({ attack: attack.name, matched: reasons.some((r) => attack.why.test(r)) }).toEqual({ attack: attack.name, matched: true });
  });

  test("fuzz: 30 random byte streams after connect, server keeps serving", async () => {
    const clients = await Promise.all(Array.from({ length: 30 }, () => RawClient.connect(s.server.port)));
    await Promise.all(
      clients.map(async (c, i) => {
        await c.connectApp();
        c.send(seeded(100 + i, 1000 + i * 997));
      }),
    );
    await withTimeout(Promise.all(clients.map((c) => c.closed)), 5000, "fuzzed connections closing");
    const after = publish({ url: s.url("AFTER"), tags: tags.slice(0, 50) });
    expect((await after.finished).tagsSent).toBe(50);
  });
});
