import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Consumer, PlainTransport, Producer, Router } from "mediasoup/types";
import type { Logger } from "../log.ts";
import { freeRtpPortPair } from "./udp-ports.ts";

/** How often a keyframe is asked of the publisher: browsers send one only when asked, and HLS cuts segments on keyframes. */
export const KEYFRAME_EVERY_MS = 1000;

export interface RtmpPush {
  /** Resolves when ffmpeg has exited (the RTMP publish is over). */
  exited: Promise<number>;
  stop(): void;
}

/**
 * A WHIP publish into the RTMP pipeline: each producer is consumed by a
 * PlainTransport sending RTP to ffmpeg on loopback, which reads it by an SDP
 * and pushes FLV (H.264 copied, Opus → AAC) to our own RTMP server. The
 * broadcast, its HLS, recording, events, slots and limits are then exactly
 * an RTMP publish's; ffmpeg leaving is the publisher leaving.
 */
export async function pushToRtmp(opts: { router: Router; video: Producer; audio?: Producer; rtmpUrl: string; logger: Logger; streamId: string }): Promise<RtmpPush> {
  const { router, logger } = opts;
  const transports: PlainTransport[] = [];
  const consumers: Consumer[] = [];
  const sections: string[] = [];
  const dir = await mkdtemp(join(tmpdir(), "vidlive-whip-"));
  try {
    for (const producer of [opts.video, opts.audio]) {
      if (!producer) continue;
      const port = await freeRtpPortPair();
      const transport = await router.createPlainTransport({ listenInfo: { protocol: "udp", ip: "127.0.0.1" }, rtcpMux: false, comedia: false });
      transports.push(transport);
      await transport.connect({ ip: "127.0.0.1", port, rtcpPort: port + 1 });
      const consumer = await transport.consume({ producerId: producer.id, rtpCapabilities: router.rtpCapabilities, paused: true });
      consumers.push(consumer);
      const codec = consumer.rtpParameters.codecs[0]!;
      const name = codec.mimeType.split("/")[1]!;
      const fmtp = Object.entries(codec.parameters ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(";");
      sections.push(
        [
          `m=${producer.kind} ${port} RTP/AVP ${codec.payloadType}`,
          `a=rtpmap:${codec.payloadType} ${name}/${codec.clockRate}${codec.channels ? `/${codec.channels}` : ""}`,
          ...(fmtp ? [`a=fmtp:${codec.payloadType} ${fmtp}`] : []),
          "a=recvonly",
        ].join("\n"),
      );
    }
    const sdpPath = join(dir, "input.sdp");
    await writeFile(sdpPath, `v=0\no=- 0 0 IN IP4 127.0.0.1\ns=vidlive-whip\nc=IN IP4 127.0.0.1\nt=0 0\n${sections.join("\n")}\n`);
    const args = [
      "ffmpeg",
      ...["-hide_banner", "-nostdin", "-loglevel", "error"],
      ...["-protocol_whitelist", "file,udp,rtp", "-fflags", "+genpts", "-reorder_queue_size", "64"],
      ...["-analyzeduration", "1000000", "-probesize", "1000000"],
      ...["-i", sdpPath],
      ...["-map", "0:v:0", "-c:v", "copy"],
      ...(opts.audio ? ["-map", "0:a:0", "-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2"] : []),
      ...["-f", "flv", opts.rtmpUrl],
    ];
    const proc = Bun.spawn(args, { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    let stopped = false;
    const keyframes = setInterval(() => {
      const video = consumers.find((c) => c.kind === "video");
      video?.requestKeyFrame().catch(() => undefined);
    }, KEYFRAME_EVERY_MS);
    // ffmpeg binds its ports as it opens the SDP: resume a moment later, with a keyframe first.
    setTimeout(() => {
      for (const c of consumers) {
        if (c.closed) continue;
        c.resume()
          .then(() => (c.kind === "video" ? c.requestKeyFrame() : undefined))
          .catch(() => undefined);
      }
    }, 300);
    const exited = (async () => {
      const stderr = await new Response(proc.stderr).text();
      const code = await proc.exited;
      clearInterval(keyframes);
      for (const t of transports) t.close();
      await rm(dir, { recursive: true, force: true });
      if (code !== 0 && !stopped) logger.warn("WHIP relay to RTMP exited", { stream_id: opts.streamId, code, stderr: stderr.slice(-500) });
      return code;
    })();
    return {
      exited,
      stop() {
        if (stopped) return;
        stopped = true;
        // SIGINT: ffmpeg finishes the FLV stream and closes the RTMP publish cleanly.
        proc.kill("SIGINT");
        setTimeout(() => proc.kill("SIGKILL"), 3000).unref?.();
      },
    };
  } catch (err) {
    for (const t of transports) t.close();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
