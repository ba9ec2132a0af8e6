import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createSocket } from "node:dgram";
import { MpegTsDemuxer } from "./mpegts-demuxer.ts";
import { loadSrt, openSrt } from "./srt-library.ts";
import { createSrtServer, type SrtPeer, type SrtServer } from "./srt-server.ts";
import { TsToFlv } from "./ts-to-flv.ts";

setDefaultTimeout(120_000);

const lib = loadSrt();
let server: SrtServer;
const peers: Array<{ peer: SrtPeer; bytes: Uint8Array[]; closed?: string }> = [];

beforeAll(() => {
  if (!lib) throw new Error("libsrt is not installed here (Debian: libsrt1.5-gnutls, pulled in by ffmpeg)");
  server = createSrtServer({
    port: 0,
    hostname: "127.0.0.1",
    onConnect(peer) {
      const entry: (typeof peers)[number] = { peer, bytes: [] };
      peers.push(entry);
      if (peer.streamId.key === "wrong") return null;
      return {
        // Read only once "authorized", a little later.
        ready: Bun.sleep(200),
        onData: (chunk) => {
          entry.bytes.push(chunk);
        },
        onClose: (reason) => {
          entry.closed = reason;
        },
      };
    },
  });
});
afterAll(() => server?.stop());

function ffmpegCaller(key: string) {
  return Bun.spawn(["ffmpeg", "-v", "error", "-re", "-i", "fixtures/av-360p-2s.mp4", "-c", "copy", "-f", "mpegts", `srt://127.0.0.1:${server.port}?streamid=publish:${key}`], { stderr: "pipe" });
}

describe("SRT listener through bun:ffi", () => {
  test("accepts ffmpeg's caller, reads its stream id and receives the whole clip while the event loop keeps running", async () => {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 50);
    const p = ffmpegCaller("key1");
    expect(await p.exited).toBe(0);
    clearInterval(ticker);
    // -re: about 2 s during which timers kept firing (accept and receive never block).
    expect(ticks).toBeGreaterThan(15);
    const entry = peers.find((e) => e.peer.streamId.key === "key1")!;
    expect(entry.peer.streamId.mode).toBe("publish");
    expect(entry.peer.remoteAddress).toBe("127.0.0.1");
    for (let i = 0; i < 100 && !entry.closed; i++) await Bun.sleep(50);
    expect(entry.closed).toBe("disconnect");
    const d = new MpegTsDemuxer();
    const c = new TsToFlv();
    const frames = entry.bytes
      .flatMap((b) => d.push(b))
      .concat(d.flush())
      .flatMap((pes) => c.push(pes));
    // The clip has 50 frames; the caller's last packets may be dropped at its close (SRT live mode has no linger).
    expect(frames.filter((t) => t.type === "video" && t.payload[1] === 1).length).toBeGreaterThanOrEqual(45);
    expect(server.connections()).toBe(0);
  });

  test("a refused caller is closed before any media is taken and ffmpeg exits with an error; UDP garbage harms nobody", async () => {
    const p = ffmpegCaller("wrong");
    const code = await Promise.race([p.exited, Bun.sleep(30_000).then(() => "hung")]);
    expect(code).not.toBe(0);
    expect(code).not.toBe("hung");
    const sock = createSocket("udp4");
    for (let i = 0; i < 500; i++) sock.send(crypto.getRandomValues(new Uint8Array(1 + (i % 1400))), server.port, "127.0.0.1");
    await Bun.sleep(300);
    sock.close();
    const ok = ffmpegCaller("key2");
    expect(await ok.exited).toBe(0);
  });
});

test("without the library: null and the reason, no throw", () => {
  const missing = openSrt(["libsrt-not-here.so.9"]);
  expect(missing.library).toBeNull();
  expect(missing.error).toContain("libsrt-not-here.so.9");
});
