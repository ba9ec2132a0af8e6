import { describe, expect, test } from "bun:test";
import { ByteQueue } from "./byte-queue.ts";
import { ChunkReader } from "./chunk-reader.ts";
import { ChunkWriter } from "./chunk-writer.ts";
import { RtmpMessageTooLargeError, RtmpProtocolError } from "./errors.ts";
import type { RtmpMessage } from "./message-types.ts";

const LIMITS = { maxMessageBytes: 1 << 20, maxChunkStreams: 64 };

/** Deterministic PRNG so a failure reproduces. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

function readAll(reader: ChunkReader, queue: ByteQueue): RtmpMessage[] {
  const out: RtmpMessage[] = [];
  for (let m = reader.read(queue); m; m = reader.read(queue)) out.push(m);
  return out;
}

/** Feeds `bytes` in random slices, reading after each, like a socket would. */
function feedInSlices(bytes: Uint8Array, reader: ChunkReader, random: () => number, maxSlice: number): RtmpMessage[] {
  const queue = new ByteQueue();
  const out: RtmpMessage[] = [];
  for (let o = 0; o < bytes.length; ) {
    const n = Math.min(bytes.length - o, 1 + Math.floor(random() * maxSlice));
    queue.push(bytes.slice(o, o + n));
    o += n;
    out.push(...readAll(reader, queue));
  }
  expect(queue.length).toBe(0);
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

describe("chunk writer → chunk reader", () => {
  for (const chunkSize of [1, 128, 4096, 65536]) {
    test(`random interleaved messages survive chunk size ${chunkSize} and arbitrary read splits`, () => {
      const random = rng(chunkSize);
      const writer = new ChunkWriter();
      const reader = new ChunkReader(LIMITS);
      writer.setChunkSize(chunkSize);
      reader.setChunkSize(chunkSize);
      const csids = [2, 3, 4, 6, 63, 64, 319, 320, 65599];
      const clock = new Map<number, number>();
      const sent: RtmpMessage[] = [];
      const count = chunkSize === 1 ? 120 : 600;
      for (let i = 0; i < count; i++) {
        const csid = csids[Math.floor(random() * csids.length)]!;
        const r = random();
        // Repeated sizes and deltas exercise fmt 2/3; large ones the extended timestamp.
        const size = r < 0.3 ? 100 : r < 0.4 ? 0 : Math.floor(random() * (chunkSize === 1 ? 300 : 20_000));
        const previous = clock.get(csid) ?? Math.floor(random() * 0x1000000);
        const step = random() < 0.5 ? 40 : random() < 0.9 ? Math.floor(random() * 100) : 0x1000000 + Math.floor(random() * 1e6);
        const timestamp = random() < 0.03 ? Math.floor(random() * 1000) : (previous + step) >>> 0; // sometimes backwards
        clock.set(csid, timestamp);
        const payload = new Uint8Array(size);
        for (let k = 0; k < size; k += 97) payload[k] = (i + k) & 0xff;
        sent.push({ chunkStreamId: csid, typeId: 8 + (i % 2), streamId: random() < 0.9 ? 1 : 0, timestamp, payload });
      }
      const wire = concat(sent.map((m) => writer.encode(m)));
      const received = feedInSlices(wire, reader, random, chunkSize === 1 ? 50 : 9000);
      // Messages on one chunk stream stay in order; across streams they interleave by completion,
      // which for whole-message writes is the send order.
      expect(received.length).toBe(sent.length);
      for (let i = 0; i < sent.length; i++) {
        const a = sent[i]!;
        const b = received[i]!;
        expect({ ...b, payload: b.payload.length }).toEqual({ ...a, payload: a.payload.length });
        expect(Buffer.compare(a.payload, b.payload)).toBe(0);
      }
    });
  }

  test("the writer compresses headers: fmt 0, then 1, 2 and 3 as fields repeat", () => {
    const writer = new ChunkWriter();
    const fmtOf = (m: Partial<RtmpMessage>) => writer.encode({ chunkStreamId: 4, typeId: 8, streamId: 1, timestamp: 0, payload: new Uint8Array(10), ...m })[0]! >> 6;
    expect(fmtOf({ timestamp: 0 })).toBe(0);
    expect(fmtOf({ timestamp: 23 })).toBe(2); // same length/type, new delta
    expect(fmtOf({ timestamp: 46 })).toBe(3); // same delta again
    expect(fmtOf({ timestamp: 69, payload: new Uint8Array(11) })).toBe(1); // length changed
    expect(fmtOf({ timestamp: 10 })).toBe(0); // backwards: absolute
    expect(fmtOf({ timestamp: 20, streamId: 2 })).toBe(0); // other message stream
  });
});

describe("chunk reader", () => {
  function header(bytes: number[]): Uint8Array {
    return new Uint8Array(bytes);
  }
  const u24 = (v: number) => [(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
  const u32 = (v: number) => [(v >>> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];

  test("a fmt 3 message after fmt 0 adds the last timestamp field again (ffmpeg/SRS reading)", () => {
    const queue = new ByteQueue();
    const reader = new ChunkReader(LIMITS);
    queue.push(header([0x04, ...u24(1000), ...u24(1), 8, 1, 0, 0, 0, 0xaa, 0xc4, 0xbb]));
    const [a, b] = readAll(reader, queue);
    expect(a!.timestamp).toBe(1000);
    expect(b!.timestamp).toBe(2000);
    expect([...b!.payload]).toEqual([0xbb]);
  });

  test("extended timestamps: fmt 0 absolute, continuation chunks with and without the repeated field", () => {
    const reader = new ChunkReader(LIMITS);
    const queue = new ByteQueue();
    const ts = 0x12345678;
    const body = Array.from({ length: 200 }, (_, i) => i & 0xff);
    // Spec form: continuation chunk repeats the 4-byte extended timestamp.
    queue.push(header([0x04, 0xff, 0xff, 0xff, ...u24(200), 9, 1, 0, 0, 0, ...u32(ts), ...body.slice(0, 128), 0xc4, ...u32(ts), ...body.slice(128)]));
    // Lenient form: an encoder that omits it on continuation chunks.
    queue.push(header([0x04, 0xff, 0xff, 0xff, ...u24(200), 9, 1, 0, 0, 0, ...u32(ts + 40), ...body.slice(0, 128), 0xc4, ...body.slice(128)]));
    const [a, b] = readAll(reader, queue);
    expect(a!.timestamp).toBe(ts);
    expect([...a!.payload]).toEqual(body);
    expect(b!.timestamp).toBe(ts + 40);
    expect([...b!.payload]).toEqual(body);
  });

  test("timestamps wrap at 32 bits", () => {
    const reader = new ChunkReader(LIMITS);
    const queue = new ByteQueue();
    queue.push(header([0x04, 0xff, 0xff, 0xff, ...u24(0), 8, 1, 0, 0, 0, ...u32(0xfffffff0)]));
    queue.push(header([0x84, ...u24(0x20)])); // fmt 2, delta 32
    const [a, b] = readAll(reader, queue);
    expect(a!.timestamp).toBe(0xfffffff0);
    expect(b!.timestamp).toBe(0x10);
  });

  test("refuses a message longer than maxMessageBytes before buffering it", () => {
    const reader = new ChunkReader({ maxMessageBytes: 1000, maxChunkStreams: 8 });
    const queue = new ByteQueue();
    queue.push(header([0x04, 0, 0, 0, ...u24(0xffffff), 9, 1, 0, 0, 0]));
    expect(() => reader.read(queue)).toThrow(RtmpMessageTooLargeError);
  });

  test("refuses too many chunk streams", () => {
    const reader = new ChunkReader({ maxMessageBytes: 1000, maxChunkStreams: 4 });
    const queue = new ByteQueue();
    for (let csid = 3; csid < 10; csid++) queue.push(header([csid, 0, 0, 0, ...u24(1), 8, 1, 0, 0, 0, 0]));
    expect(() => readAll(reader, queue)).toThrow(/more than 4 chunk streams/);
  });

  test("refuses fmt 2/3 on a chunk stream it has never seen", () => {
    for (const first of [0x84, 0xc4]) {
      const queue = new ByteQueue();
      queue.push(header([first, 0, 0, 0, 1, 2, 3]));
      expect(() => new ChunkReader(LIMITS).read(queue)).toThrow(RtmpProtocolError);
    }
  });

  test("refuses chunk sizes outside 1..2^31-1", () => {
    const reader = new ChunkReader(LIMITS);
    expect(() => reader.setChunkSize(0)).toThrow(RtmpProtocolError);
    expect(() => reader.setChunkSize(0x80000000)).toThrow(RtmpProtocolError);
    reader.setChunkSize(0x7fffffff); // legal, and harmless: messages are at most 16 MiB
  });

  test("Abort drops the partial message; a new header mid-message abandons it too", () => {
    const reader = new ChunkReader(LIMITS);
    const queue = new ByteQueue();
    queue.push(header([0x04, 0, 0, 0, ...u24(300), 9, 1, 0, 0, 0, ...new Array(128).fill(1)]));
    expect(reader.read(queue)).toBeNull();
    expect(reader.bufferedBytes).toBe(128);
    reader.abort(4);
    expect(reader.bufferedBytes).toBe(0);
    queue.push(header([0x44, 0, 0, 5, ...u24(2), 8, 7, 7]));
    const message = reader.read(queue)!;
    expect([...message.payload]).toEqual([7, 7]);
    expect(message.timestamp).toBe(5);
    // Half a message, then a fresh fmt 1 header on the same chunk stream.
    queue.push(header([0x04, 0, 0, 0, ...u24(300), 9, 1, 0, 0, 0, ...new Array(128).fill(1)]));
    expect(reader.read(queue)).toBeNull();
    queue.push(header([0x44, 0, 0, 9, ...u24(1), 8, 3]));
    expect([...reader.read(queue)!.payload]).toEqual([3]);
    expect(reader.bufferedBytes).toBe(0);
  });

  test("zero-length messages complete immediately", () => {
    const reader = new ChunkReader(LIMITS);
    const queue = new ByteQueue();
    queue.push(header([0x04, 0, 0, 0, ...u24(0), 8, 1, 0, 0, 0]));
    expect(reader.read(queue)!.payload.length).toBe(0);
  });
});
