import type { FileSink } from "bun";
import type { PlainTransport, Producer, Router } from "mediasoup/types";
import { encodeFlvHeader, encodeFlvTag } from "../../media/flv/flv-writer.ts";
import type { FlvTag } from "../../media/flv/flv-tag.ts";
import type { Broadcast } from "../live/broadcast.ts";
import type { Logger } from "../log.ts";
import { H264_PROFILE } from "./media-server.ts";
import { freeRtpPortPair } from "./udp-ports.ts";
import type { MediaSource } from "./whep-session.ts";

const VIDEO = { pt: 102, ssrc: 22_222_222 };
const AUDIO = { pt: 101, ssrc: 11_111_111 };
/** Past this much FLV unread by ffmpeg, the relay is restarted rather than buffering without end. */
const MAX_BACKLOG_BYTES = 8 << 20;

/**
 * How the relay sends the video: `copy` (the encoder's H.264 as is, no
 * decode) or `baseline` (re-encoded to constrained baseline without
 * B-frames: only when media/flv/webrtc-fit.ts says the source cannot go as is).
 */
export type RelayVideoMode = "copy" | "baseline";

export interface RtmpRelay extends MediaSource {
  video: Producer;
  audio: Producer;
  /** What the relay's ffmpeg does with the video now (null before its first keyframe). */
  readonly videoMode: RelayVideoMode | null;
  stop(): void;
  readonly stopped: boolean;
}

const isKeyframe = (t: FlvTag) => t.type === "video" && t.payload[0]! >> 4 === 1 && t.payload[1] === 1;

/**
 * The re-encode for a source WebRTC cannot take as is (B-frames, 10-bit,
 * interlaced): libx264 constrained baseline, no B-frames, the source's size
 * and frame rate (every decoded picture, none added), a keyframe a second
 * (a new viewer waits at most that long: PLI does not reach ffmpeg), CRF
 * with a ceiling. superfast: 720p30 cost 25 % of one core here (veryfast 31 %,
 * ultrafast 20 %; src/webrtc/README.md).
 */
export const BASELINE_VIDEO_ARGS = [
  ...["-c:v", "libx264", "-preset", "superfast", "-tune", "zerolatency", "-profile:v", "baseline", "-pix_fmt", "yuv420p"],
  ...["-fps_mode", "passthrough", "-force_key_frames", "expr:gte(t,n_forced*1)", "-crf", "23", "-maxrate", "4M", "-bufsize", "2M"],
];

/**
 * An RTMP-published broadcast for WHEP viewers: its FLV tags (a broadcast
 * subscriber, in process) are piped into ffmpeg as FLV, which sends the H.264
 * and the AAC as Opus over RTP to two PlainTransports (comedia: mediasoup
 * learns ffmpeg's ports from the first packet) with a producer each. The
 * H.264 goes as is (Annex B, SPS/PPS before each keyframe) when the
 * broadcast's `webrtcFit()` allows, else re-encoded to constrained baseline
 * (`BASELINE_VIDEO_ARGS`): B-frames play at about one picture per keyframe in
 * a browser (RTP has no decode time). The mode is chosen at the relay's first
 * keyframe; should the source turn unfit later (a reconnecting encoder with
 * other settings), ffmpeg is restarted at the next keyframe in `baseline`
 * mode from the same local ports, so the producers and the viewers stay.
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
    // ffmpeg's own ports, fixed: a restarted ffmpeg is the same comedia tuple to mediasoup.
    const local = { video: await freeRtpPortPair(), audio: await freeRtpPortPair() };
    const rtp = (t: PlainTransport, from: number) => `rtp://127.0.0.1:${t.tuple.localPort}?rtcpport=${t.rtcpTuple!.localPort}&localrtpport=${from}&localrtcpport=${from + 1}&pkt_size=1200`;
    const argsFor = (mode: RelayVideoMode) => [
      "ffmpeg",
      ...["-hide_banner", "-loglevel", "error"],
      ...["-fflags", "nobuffer", "-flags", "low_delay", "-probesize", "65536", "-analyzeduration", "500000"],
      ...["-f", "flv", "-i", "pipe:0"],
      ...["-map", "0:v:0", ...(mode === "copy" ? ["-c:v", "copy", "-bsf:v", "h264_mp4toannexb"] : BASELINE_VIDEO_ARGS)],
      ...["-f", "rtp", "-payload_type", String(VIDEO.pt), "-ssrc", String(VIDEO.ssrc), rtp(vt, local.video)],
      ...["-map", "0:a:0?", "-c:a", "libopus", "-b:a", "96k", "-ar", "48000", "-ac", "2", "-application", "lowdelay"],
      ...["-f", "rtp", "-payload_type", String(AUDIO.pt), "-ssrc", String(AUDIO.ssrc), rtp(at, local.audio)],
    ];

    let stopped = false;
    let relay!: RtmpRelay;
    /** The running ffmpeg, its stdin and mode; null before the first keyframe and while a restart waits for the old one to exit. */
    let current: { proc: Bun.Subprocess<"pipe", "ignore", "pipe">; stdin: FileSink; mode: RelayVideoMode; pending: number } | null = null;
    let restarting: Promise<unknown> | null = null;
    let mode: RelayVideoMode | null = null;

    const spawn = (m: RelayVideoMode) => {
      const proc = Bun.spawn(argsFor(m), { stdin: "pipe", stdout: "ignore", stderr: "pipe" });
      const ff = { proc, stdin: proc.stdin as FileSink, mode: m, pending: 0 };
      current = ff;
      mode = m;
      logger.info("WHEP relay of an RTMP broadcast started", { stream_id: opts.streamId, video: m, ...(m === "baseline" ? { why: opts.broadcast.webrtcFit().unfit?.message } : {}) });
      void (async () => {
        const stderr = await new Response(proc.stderr).text();
        const code = await proc.exited;
        // A restart ends its old ffmpeg on purpose; any other exit ends the relay.
        if (current !== ff) return;
        if (code !== 0 && !stopped) logger.warn("WHEP relay of an RTMP broadcast exited", { stream_id: opts.streamId, code, stderr: stderr.slice(-500) });
        relay.stop();
      })();
    };
    const write = (bytes: Uint8Array) => {
      const ff = current;
      if (stopped || !ff) return;
      ff.pending += bytes.byteLength;
      ff.stdin.write(bytes);
      const flushed = ff.stdin.flush();
      if (typeof flushed === "number") ff.pending = Math.max(0, ff.pending - bytes.byteLength);
      else
        void Promise.resolve(flushed)
          .then(() => {
            ff.pending = 0;
          })
          .catch(() => undefined);
      if (ff.pending > MAX_BACKLOG_BYTES) {
        logger.warn("WHEP relay of an RTMP broadcast fell behind; stopped", { stream_id: opts.streamId, backlog_bytes: ff.pending, video: ff.mode });
        relay.stop();
      }
    };
    const end = (ff: NonNullable<typeof current>) => {
      try {
        ff.stdin.end();
      } catch {
        // ffmpeg already gone
      }
      ff.proc.kill("SIGKILL");
      return ff.proc.exited;
    };
    const subscription = opts.broadcast.subscribe({
      onTag(tag) {
        if (!isKeyframe(tag)) {
          if (current) write(encodeFlvTag(tag));
          return;
        }
        const wanted: RelayVideoMode = opts.broadcast.webrtcFit().unfit ? "baseline" : "copy";
        if (current && current.mode === "copy" && wanted === "baseline" && !restarting) {
          logger.info("WHEP relay of an RTMP broadcast: the source turned unfit for WebRTC as is; re-encoding", { stream_id: opts.streamId, why: opts.broadcast.webrtcFit().unfit?.message });
          const old = current;
          current = null;
          restarting = end(old).finally(() => {
            restarting = null;
          });
          return;
        }
        // Start (or restart) at a keyframe, after the header and the codec configurations, so ffmpeg's first packet decodes.
        if (!current && !restarting && !stopped) {
          spawn(wanted);
          write(encodeFlvHeader({ hasAudio: true, hasVideo: true }));
          for (const h of subscription.headers()) write(encodeFlvTag({ ...h, timestamp: tag.timestamp }));
        }
        if (current) write(encodeFlvTag(tag));
      },
      onEnd: () => relay.stop(),
    });
    relay = {
      video,
      audio,
      get videoMode() {
        return mode;
      },
      get stopped() {
        return stopped;
      },
      stop() {
        if (stopped) return;
        stopped = true;
        subscription.unsubscribe();
        const ff = current;
        current = null;
        if (ff) {
          try {
            ff.stdin.end();
          } catch {
            // ffmpeg already gone
          }
          ff.proc.kill("SIGTERM");
        }
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
