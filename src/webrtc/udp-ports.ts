import { createSocket, type Socket } from "node:dgram";

function bind(port: number): Promise<Socket | null> {
  return new Promise((resolve) => {
    const s = createSocket("udp4");
    s.once("error", () => {
      s.close();
      resolve(null);
    });
    s.bind(port, "127.0.0.1", () => resolve(s));
  });
}

/**
 * An even loopback UDP port P with P+1 free too: ffmpeg's RTP input listens on
 * the SDP's port for RTP and the next one for RTCP. Probed by binding, then
 * released for ffmpeg (a race with another process is possible but harmless:
 * ffmpeg fails to bind and the session ends with an error logged).
 */
export async function freeRtpPortPair(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const a = await bind(0);
    if (!a) continue;
    const p = a.address().port;
    const base = p % 2 === 0 ? p : p - 1;
    const other = await bind(base === p ? p + 1 : base);
    a.close();
    if (other) {
      other.close();
      return base;
    }
  }
  throw new Error("No free UDP port pair on 127.0.0.1");
}
