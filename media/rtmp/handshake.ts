/**
 * The simple RTMP handshake (spec section 5.2). ffmpeg and OBS accept it, so
 * the digest-based "complex" handshake of Flash Player is not implemented.
 *
 *   client: C0 (version 3) + C1 (1536 bytes)
 *   server: S0 + S1 (time, four zero bytes, random) + S2 (echo of C1)
 *   client: C2 (echo of S1; content not checked: encoders vary)
 */
import type { ByteQueue } from "./byte-queue.ts";
import { RtmpHandshakeError } from "./errors.ts";

export const RTMP_VERSION = 3;
export const HANDSHAKE_PACKET_SIZE = 1536;

/** time(4) + zero(4) + random(1528): the zero "version" bytes select the simple handshake. */
function randomPacket(): Uint8Array {
  const packet = new Uint8Array(HANDSHAKE_PACKET_SIZE);
  crypto.getRandomValues(packet.subarray(8));
  return packet;
}

export type HandshakeStep = { reply: Uint8Array | null; done: boolean };

export class ServerHandshake {
  private phase: "c0c1" | "c2" | "done" = "c0c1";

  get done(): boolean {
    return this.phase === "done";
  }

  /** Consumes what it can from `queue`; returns bytes to send, and whether C2 arrived. */
  advance(queue: ByteQueue): HandshakeStep {
    let reply: Uint8Array | null = null;
    if (this.phase === "c0c1") {
      // Check the version as soon as it arrives so garbage is refused without waiting for 1537 bytes.
      if (queue.length >= 1 && queue.peek(0) !== RTMP_VERSION) {
        throw new RtmpHandshakeError(`unsupported RTMP version byte 0x${queue.peek(0).toString(16)}`);
      }
      if (queue.length < 1 + HANDSHAKE_PACKET_SIZE) return { reply: null, done: false };
      queue.skip(1);
      const c1 = queue.take(HANDSHAKE_PACKET_SIZE);
      reply = new Uint8Array(1 + 2 * HANDSHAKE_PACKET_SIZE);
      reply[0] = RTMP_VERSION;
      reply.set(randomPacket(), 1);
      reply.set(c1, 1 + HANDSHAKE_PACKET_SIZE);
      this.phase = "c2";
    }
    if (this.phase === "c2" && queue.length >= HANDSHAKE_PACKET_SIZE) {
      queue.skip(HANDSHAKE_PACKET_SIZE);
      this.phase = "done";
    }
    return { reply, done: this.done };
  }
}

export class ClientHandshake {
  private phase: "sent" | "done" = "sent";

  get done(): boolean {
    return this.phase === "done";
  }

  /** C0 + C1, sent right after connecting. */
  start(): Uint8Array {
    const out = new Uint8Array(1 + HANDSHAKE_PACKET_SIZE);
    out[0] = RTMP_VERSION;
    out.set(randomPacket(), 1);
    return out;
  }

  /** Waits for S0 + S1 + S2, then returns C2. */
  advance(queue: ByteQueue): HandshakeStep {
    if (this.phase === "done") return { reply: null, done: true };
    if (queue.length >= 1 && queue.peek(0) !== RTMP_VERSION) {
      throw new RtmpHandshakeError(`server answered with RTMP version byte 0x${queue.peek(0).toString(16)}`);
    }
    if (queue.length < 1 + 2 * HANDSHAKE_PACKET_SIZE) return { reply: null, done: false };
    queue.skip(1);
    const s1 = queue.take(HANDSHAKE_PACKET_SIZE);
    queue.skip(HANDSHAKE_PACKET_SIZE);
    this.phase = "done";
    return { reply: s1, done: true };
  }
}
