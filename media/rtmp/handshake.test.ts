import { describe, expect, test } from "bun:test";
import { ByteQueue } from "./byte-queue.ts";
import { RtmpHandshakeError } from "./errors.ts";
import { ClientHandshake, HANDSHAKE_PACKET_SIZE, ServerHandshake } from "./handshake.ts";

describe("simple handshake", () => {
  test("server answers S0 + S1 (zero version bytes) + S2 (echo of C1), then waits for C2, byte by byte", () => {
    const client = new ClientHandshake();
    const server = new ServerHandshake();
    const c0c1 = client.start();
    const queue = new ByteQueue();
    let reply: Uint8Array | null = null;
    for (const byte of c0c1) {
      queue.push(new Uint8Array([byte]));
      const step = server.advance(queue);
      if (step.reply) reply = step.reply;
      expect(step.done).toBe(false);
    }
    expect(reply!.length).toBe(1 + 2 * HANDSHAKE_PACKET_SIZE);
    expect(reply![0]).toBe(3);
    expect([...reply!.subarray(5, 9)]).toEqual([0, 0, 0, 0]);
    expect(Buffer.compare(reply!.subarray(1 + HANDSHAKE_PACKET_SIZE), c0c1.subarray(1))).toBe(0);

    const clientQueue = new ByteQueue();
    clientQueue.push(reply!);
    const c2 = client.advance(clientQueue).reply!;
    expect(Buffer.compare(c2, reply!.subarray(1, 1 + HANDSHAKE_PACKET_SIZE))).toBe(0);
    queue.push(c2);
    queue.push(new Uint8Array([0x42])); // first chunk byte, already pipelined
    expect(server.advance(queue).done).toBe(true);
    expect(queue.length).toBe(1);
  });

  test("a wrong version byte is refused at once, without waiting for C1", () => {
    const queue = new ByteQueue();
    queue.push(new Uint8Array([0x47])); // "G" of "GET / HTTP/1.1"
    expect(() => new ServerHandshake().advance(queue)).toThrow(RtmpHandshakeError);
  });
});
