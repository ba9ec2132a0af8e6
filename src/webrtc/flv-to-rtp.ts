import type { FileSink } from "bun";
import type { PlainTransport, Producer, Router } from "mediasoup/types";
import { encodeFlvHeader, encodeFlvTag } from "../../media/flv/flv-writer.ts";
import type { FlvTag } from "../../media/flv/flv-tag.ts";
import type { Broadcast } from "../live/broadcast.ts";
import type { Logger } from "../log.ts";
import { H264_PROFILE } from "./media-server.ts";
import type { MediaSource } from "./whep-session.ts";

const VIDEO = { pt: 102, ssrc: 22_222_222 };
const AUDIO = { pt: 101, ssrc: 11_111_111 };
/** Past this much FLV unread by ffmpeg, the relay is restarted rather than buffering without end. */
const MAX_BACKLOG_BYTES = 8 << 20;

export interface RtmpRelay extends MediaSource {
  video: Producer;
  audio: Producer;
  stop(): void;
  readonly stopped: boolean;
}

const isKeyframe = (t: FlvTag) => t.type === "video" && t.payload[0]! >> 4 === 1 && t.payload[1] === 1;

/**
 * An RTMP-published broadcast for WHEP viewers: its FLV tags (a broadcast
 * subscriber, in process) are piped into ffmpeg as FLV, which sends the H.264
 * as is (Annex B, SPS/PPS before each keyframe) and the AAC as Opus over RTP
 * to two PlainTransports (comedia: mediasoup learns ffmpeg's ports from the
 * first packet) with a producer each. The H.264 is declared constrained
 * baseline (what browsers accept for WebRTC): browsers decode main/high too,
 * but B-frames play out of order over RTP, so WebRTC viewers need an encoder
 * without them (OBS: the default for WHIP; x264 `-bf 0` or `-tune zerolatency`).
 */
export async function relayBroadcast(opts: { router: Router; broadcast: Broadcast; logger: Logger; streamId: string; onEnd: () => void }): Promise<RtmpRelay> {
  const { router, logger } = opts;
  const transports: PlainTransport[] = [];
  const plain = async () => {
    const t = await router.createPlainTransport({ listenInfo: { protocol: "udp", ip: "127.0.0.1" }, rtcpMux: false, comedia: true });
    transports.push(t);
    return t;
  };
  try {
    const vt = await plain();
    const at = await plain();
    const video = await vt.produce({
      kind: "video",
      rtpParameters: {
        codecs: [
          {
            mimeType: "video/H264",
            payloadType: VIDEO.pt,
            clockRate: 90000,
            parameters: { "packetization-mode": 1, "profile-level-id": H264_PROFILE, "level-asymmetry-allowed": 1 },
            rtcpFeedback: [{ type: "nack" }, { type: "nack", parameter: "pli" }, { type: "ccm", parameter: "fir" }],
          },
        ],
        encodings: [{ ssrc: VIDEO.ssrc }],
      },
    });
    const audio = await at.produce({
      kind: "audio",
      rtpParameters: { codecs: [{ mimeType: "audio/opus", payloadType: AUDIO.pt, clockRate: 48000, channels: 2 }], encodings: [{ ssrc: AUDIO.ssrc }] },
    });
    const rtp = (t: PlainTransport) => `rtp://127.0.0.1:${t.tuple.localPort}?rtcpport=${t.rtcpTuple!.localPort}&pkt_size=1200`;
    const args = [
      "ffmpeg",
      ...["-hide_banner", "-loglevel", "error"],
      ...["-fflags", "nobuffer", "-flags", "low_delay", "-probesize", "65536", "-analyzeduration", "500000"],
      ...["-f", "flv", "-i", "pipe:0"],
      ...["-map", "0:v:0", "-c:v", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "rtp", "-payload_type", String(VIDEO.pt), "-ssrc", String(VIDEO.ssrc), rtp(vt)],
      ...[
        "-map",
        "0:a:0?",
        "-c:a",
        "libopus",
        "-b:a",
        "96k",
        "-ar",
        "48000",
        "-ac",
        "2",
        "-application",
        "lowdelay",
        "-f",
        "rtp",
        "-payload_type",
        String(AUDIO.pt),
        "-ssrc",
        String(AUDIO.ssrc),
        rtp(at),
      ],
    ];
    const proc = Bun.spawn(args, { stdin: "pipe", stdout: "ignore", stderr: "pipe" });
    const stdin = proc.stdin as FileSink;
    let stopped = false;
    let started = false;
    let relay!: RtmpRelay;
    let pending = 0;
    const write = (bytes: Uint8Array) => {
      if (stopped) return;
      pending += bytes.byteLength;
      const r = stdin.write(bytes);
      const flushed = stdin.flush();
      if (typeof flushed === "number") pending = Math.max(0, pending - bytes.byteLength);
      else
        void Promise.resolve(flushed)
          .then(() => {
            pending = 0;
          })
          .catch(() => undefined);
      void r;
      if (pending > MAX_BACKLOG_BYTES) {
        logger.warn("WHEP relay of an RTMP broadcast fell behind; stopped", { stream_id: opts.streamId, backlog_bytes: pending });
        relay.stop();
      }
    };
    const subscription = opts.broadcast.subscribe({
      onTag(tag) {
        // Start at a keyframe, after the header and the codec configurations, so ffmpeg's first packet decodes.
        if (!started) {
          if (!isKeyframe(tag)) return;
          started = true;
          write(encodeFlvHeader({ hasAudio: true, hasVideo: true }));
          for (const h of subscription.headers()) write(encodeFlvTag({ ...h, timestamp: tag.timestamp }));
        }
        write(encodeFlvTag(tag));
      },
      onEnd: () => relay.stop(),
    });
    void (async () => {
      const stderr = await new Response(proc.stderr).text();
      const code = await proc.exited;
      if (code !== 0 && !stopped) logger.warn("WHEP relay of an RTMP broadcast exited", { stream_id: opts.streamId, code, stderr: stderr.slice(-500) });
      relay.stop();
    })();
    relay = {
      video,
      audio,
      get stopped() {
        return stopped;
      },
      stop() {
        if (stopped) return;
        stopped = true;
        subscription.unsubscribe();
        try {
          stdin.end();
        } catch {
          // ffmpeg already gone
        }
        proc.kill("SIGTERM");
        for (const t of transports) t.close();
        opts.onEnd();
      },
    };
    return relay;
  } catch (err) {
    for (const t of transports) t.close();
    throw err;
  }
}
