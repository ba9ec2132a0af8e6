/**
 * The mediasoup worker built by `npm run setup:webrtc` (issue 14), driven under
 * Bun: a Router with H.264 and Opus, a PlainTransport fed real H.264 RTP by
 * Debian's ffmpeg, and a WebRtcTransport consuming it. Skips (with the reason)
 * only where the worker is not built; `.ci/run` builds it, so in CI it runs.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { types } from "mediasoup";
import { startTestService } from "../../test/support/test-service.ts";
import { webrtcAvailability } from "./availability.ts";

setDefaultTimeout(120_000);

const availability = webrtcAvailability();
const hasFfmpeg = Bun.which("ffmpeg") !== null;
if (!availability.available) console.warn(`mediasoup worker tests skipped: ${availability.reason}; build it with \`npm run setup:webrtc\``);

describe("webrtcAvailability", () => {
  const dir = mkdtempSync(join(tmpdir(), "webrtc-avail-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a missing or non-executable worker is unavailable, with the reason", () => {
    const missing = webrtcAvailability({ MEDIASOUP_WORKER_BIN: join(dir, "nope") });
    expect(missing).toEqual({ available: false, reason: `the mediasoup worker ${join(dir, "nope")} is not built` });
    const plain = join(dir, "plain-file");
    writeFileSync(plain, "#!/bin/sh\n");
    chmodSync(plain, 0o644);
    expect(webrtcAvailability({ MEDIASOUP_WORKER_BIN: plain })).toEqual({ available: false, reason: `the mediasoup worker ${plain} is not executable` });
    chmodSync(plain, 0o755);
    expect(webrtcAvailability({ MEDIASOUP_WORKER_BIN: plain })).toEqual({ available: true, workerBin: plain });
  });

  test("GET /organization/ features.webrtc says whether the worker is there", async () => {
    const saved = process.env.MEDIASOUP_WORKER_BIN;
    process.env.MEDIASOUP_WORKER_BIN = join(dir, "not-built");
    const without = await startTestService().finally(() => {
      if (saved === undefined) delete process.env.MEDIASOUP_WORKER_BIN;
      else process.env.MEDIASOUP_WORKER_BIN = saved;
    });
    try {
      const body = (await (await without.api("/organization/")).json()) as { data: { organization: { features: { webrtc: boolean } } } };
      expect(body.data.organization.features.webrtc).toBe(false);
    } finally {
      await without.stop({ cleanup: true });
    }
    const current = await startTestService();
    try {
      const body = (await (await current.api("/organization/")).json()) as { data: { organization: { features: { webrtc: boolean } } } };
      expect(body.data.organization.features.webrtc).toBe(availability.available);
    } finally {
      await current.stop({ cleanup: true });
    }
  });
});

const H264_PARAMETERS = { "packetization-mode": 1, "profile-level-id": "42e01f", "level-asymmetry-allowed": 1 };

describe.skipIf(!availability.available || !hasFfmpeg)("mediasoup worker under Bun", () => {
  let mediasoup: typeof import("mediasoup");
  let worker: types.Worker;
  let ffmpeg: ReturnType<typeof Bun.spawn> | undefined;

  beforeAll(async () => {
    // Imported here: the module is only useful (and only loaded) with a worker.
    mediasoup = await import("mediasoup");
    if (!availability.available) throw new Error("unreachable");
    worker = await mediasoup.createWorker({ workerBin: availability.workerBin, logLevel: "warn", rtcMinPort: 40000, rtcMaxPort: 49999 });
  });
  afterAll(() => {
    ffmpeg?.kill("SIGKILL");
    worker?.close();
  });

  test("H.264 RTP from ffmpeg reaches a producer; a WebRtcTransport consumes it", async () => {
    const dump = await worker.dump();
    expect(dump.pid).toBe(worker.pid);

    const router = await worker.createRouter({
      mediaCodecs: [
        { kind: "audio", mimeType: "audio/opus", clockRate: 48000, channels: 2 },
        { kind: "video", mimeType: "video/H264", clockRate: 90000, parameters: H264_PARAMETERS },
      ],
    });
    expect(router.rtpCapabilities.codecs?.map((c) => c.mimeType)).toEqual(expect.arrayContaining(["audio/opus", "video/H264"]));

    // comedia: the transport learns ffmpeg's addresses from its packets. Not rtcpMux: ffmpeg sends
    // RTCP from another local port than RTP, and with one muxed port the first packet (often an
    // RTCP SR) would fix the tuple and every RTP packet after it would be dropped.
    const plain = await router.createPlainTransport({ listenInfo: { protocol: "udp", ip: "127.0.0.1" }, rtcpMux: false, comedia: true });
    const ssrc = 22_222_222;
    const producer = await plain.produce({
      kind: "video",
      rtpParameters: { codecs: [{ mimeType: "video/H264", payloadType: 102, clockRate: 90000, parameters: H264_PARAMETERS }], encodings: [{ ssrc }] },
    });

    const webrtc = await router.createWebRtcTransport({ listenInfos: [{ protocol: "udp", ip: "127.0.0.1" }] });
    expect(webrtc.iceCandidates.length).toBeGreaterThan(0);
    expect(webrtc.dtlsParameters.fingerprints.length).toBeGreaterThan(0);
    const consumer = await webrtc.consume({ producerId: producer.id, rtpCapabilities: router.rtpCapabilities });
    expect(consumer.kind).toBe("video");
    expect(consumer.rtpParameters.codecs[0]?.mimeType).toBe("video/H264");

    const port = plain.tuple.localPort;
    const rtcpPort = plain.rtcpTuple?.localPort;
    expect(rtcpPort).toBeGreaterThan(0);
    ffmpeg = Bun.spawn(
      [
        "ffmpeg",
        "-hide_banner",
        "-loglevel",
        "error",
        "-re",
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x240:rate=25",
        "-t",
        "20",
        "-c:v",
        "libx264",
        "-profile:v",
        "baseline",
        "-level",
        "3.1",
        "-pix_fmt",
        "yuv420p",
        "-tune",
        "zerolatency",
        "-g",
        "25",
        "-an",
        "-payload_type",
        "102",
        "-ssrc",
        String(ssrc),
        "-f",
        "rtp",
        `rtp://127.0.0.1:${port}?rtcpport=${rtcpPort}&pkt_size=1200`,
      ],
      { stdout: "ignore", stderr: "pipe" },
    );

    let packets = 0;
    let bytes = 0;
    for (let i = 0; i < 100 && packets < 50; i++) {
      await Bun.sleep(200);
      const stats = await producer.getStats();
      packets = stats.reduce((sum, s) => sum + s.packetCount, 0);
      bytes = stats.reduce((sum, s) => sum + s.byteCount, 0);
    }
    expect(packets).toBeGreaterThanOrEqual(50);
    expect(bytes).toBeGreaterThan(packets * 100);
    expect(producer.score.length).toBeGreaterThan(0);
  }, 120_000);
});
