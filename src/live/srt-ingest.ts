import type { FlvTag } from "../../media/flv/flv-tag.ts";
import { publish } from "../../media/rtmp/rtmp-publisher.ts";
import { RELAY_TOKEN_PARAM, type RtmpServer } from "../../media/rtmp/rtmp-server.ts";
import { MpegTsDemuxer } from "../../media/srt/mpegts-demuxer.ts";
import { loadSrt, srtLoadError } from "../../media/srt/srt-library.ts";
import { createSrtServer, type SrtPeer, type SrtPeerSink, type SrtServer } from "../../media/srt/srt-server.ts";
import { TsToFlv } from "../../media/srt/ts-to-flv.ts";
import type { Logger } from "../log.ts";
import type { LivestreamService } from "./livestream-service.ts";

/** Tags queued towards the relay before the caller's reads are held back (SRT's flow control then slows it). */
const QUEUE_HIGH_WATER = 512;

/**
 * SRT ingest: one SRT listening socket (SRT_PORT, every stream) whose
 * callers' MPEG-TS is demuxed into FLV tags and relayed into our own RTMP
 * server on loopback with the stream's signed push URL, as WHIP is. So an
 * SRT publish takes exactly the RTMP path: the same authorize (the lease,
 * PUBLISH_STARTED, the stream's state), events, broadcast (recording, live
 * HLS, WHEP, outputs), bitrate cap, kick at the end, and a seat under the
 * per-address and total connection limits held for the caller's address.
 *
 * A caller is refused after SRT's handshake, before any of its media is
 * read: libsrt's listen callback runs on libsrt's own thread and must
 * answer synchronously, which a JS callback through bun:ffi cannot do
 * (and the key's lookup is a database read), so the socket is accepted,
 * its stream id read, and it is closed at once when the key or the stream
 * refuses it (ffmpeg then exits with an I/O error).
 */
export function createSrtIngest(deps: {
  port: number | null;
  hostname: string;
  /** The host encoders reach (RTMP_HOST / BASE_URL's), for `srt_url`. */
  publicHost: string;
  livestreams: LivestreamService;
  rtmp: () => RtmpServer | undefined;
  /** The stream's signed RTMP push URL. */
  rtmpUrl: (streamKey: string) => string;
  /** Accept → decodable media (a keyframe with its SPS/PPS); later callers are closed (RTMP_PUBLISH_DEADLINE_MS). */
  publishDeadlineMs: number;
  logger: Logger;
}) {
  const logger = deps.logger.child({ component: "srt" });
  let server: SrtServer | undefined;

  function onConnect(peer: SrtPeer): SrtPeerSink | null {
    const refuse = (reason: string) => {
      logger.warn("SRT publish refused", { reason, remote: peer.remoteAddress, connection: peer.id });
      return null;
    };
    const rtmp = deps.rtmp();
    if (!rtmp) return refuse("RTMP ingest is not running");
    if (peer.streamId.mode !== "publish") return refuse("stream id is not publish:KEY");
    const reserved = rtmp.reserve(peer.remoteAddress);
    if (!reserved.ok) return refuse(reserved.reason === "per-ip limit" ? `too many ingest connections from this address (at most ${reserved.limit})` : "live ingest capacity is exhausted");
    const seat = reserved.seat;
    const key = peer.streamId.key;
    const demux = new MpegTsDemuxer();
    const toFlv = new TsToFlv();
    const queue = new TagQueue();
    let relay: ReturnType<typeof publish> | undefined;
    const deadline = setTimeout(() => {
      if (!toFlv.videoStarted) {
        logger.warn("SRT caller closed: no decodable H.264 within the publish deadline", { connection: peer.id, deadline_ms: deps.publishDeadlineMs });
        peer.close();
      }
    }, deps.publishDeadlineMs || 10_000);

    const ready = (async () => {
      const record = await deps.livestreams.byStreamKey(key);
      if (!record) throw new Error("Bad stream key.");
      const url = new URL(deps.rtmpUrl(key));
      url.hostname = "127.0.0.1";
      url.port = String(rtmp.port);
      url.searchParams.set(RELAY_TOKEN_PARAM, seat.token);
      relay = publish({ url: url.toString(), tags: queue, timeoutMs: 15_000 });
      // The RTMP authorize's refusal (booked, ended, another encoder, the lease elsewhere) rejects here.
      await relay.started;
      relay.finished.then(
        () => undefined,
        // Kicked (the stream ended), over the bitrate cap, or the relay lost: the caller goes too.
        () => peer.close(),
      );
      logger.info("SRT publish accepted", { stream_id: record.id, org_id: record.orgId, remote: peer.remoteAddress, connection: peer.id });
    })();
    ready.catch((err: Error) => {
      logger.warn("SRT publish refused", { reason: err.message, remote: peer.remoteAddress, connection: peer.id });
    });

    return {
      ready,
      onData(chunk) {
        for (const pes of demux.push(chunk)) for (const tag of toFlv.push(pes)) queue.push(tag);
        return queue.size() > QUEUE_HIGH_WATER ? queue.drained() : undefined;
      },
      onClose(reason) {
        clearTimeout(deadline);
        for (const pes of demux.flush()) for (const tag of toFlv.push(pes)) queue.push(tag);
        queue.end();
        logger.info("SRT caller left", { connection: peer.id, reason });
        // Unpublishes once the queued tags are sent (the stream's reconnect window then runs, as for RTMP).
        const done = relay ? relay.finished.catch(() => undefined) : Promise.resolve();
        void done.finally(() => seat.release());
      },
    };
  }

  return {
    /** Whether SRT ingest is listening (`features.srt`, `srt_url`). */
    available: () => server !== undefined,
    get port() {
      return server?.port ?? null;
    },
    srtUrl(streamKey: string): string | null {
      return server ? `srt://${deps.publicHost}:${server.port}?streamid=publish:${streamKey}` : null;
    },
    /** Starts listening; without libsrt (or with the port taken) the service runs without SRT, said once. */
    start() {
      if (deps.port === null) {
        logger.info("SRT ingest off (SRT_PORT=off)");
        return;
      }
      const lib = loadSrt();
      if (!lib) {
        logger.warn("SRT ingest unavailable: libsrt is not installed (Debian: apt-get install libsrt1.5-gnutls, which ffmpeg pulls in); srt_url is null", { detail: srtLoadError() });
        return;
      }
      try {
        server = createSrtServer({
          port: deps.port,
          hostname: deps.hostname,
          library: lib,
          onConnect,
          logger: ({ level, msg, ...entry }) => {
            if (level === "warn") logger.warn(typeof msg === "string" ? msg : "srt", entry);
            else logger.debug("srt", entry);
          },
        });
        logger.info("SRT ingest listening", { port: server.port, library: lib.name });
      } catch (err) {
        logger.error("SRT ingest unavailable: cannot listen; srt_url is null", { err, port: deps.port });
      }
    },
    async stop() {
      await server?.stop();
      server = undefined;
    },
  };
}

export type SrtIngest = ReturnType<typeof createSrtIngest>;

/** FLV tags from the demuxer to the relay: an async iterable the RTMP publisher pulls from. */
class TagQueue implements AsyncIterable<FlvTag> {
  private items: FlvTag[] = [];
  private ended = false;
  private wake: (() => void) | null = null;
  private drainWaiters: Array<() => void> = [];

  size = () => this.items.length;

  push(tag: FlvTag) {
    if (this.ended) return;
    this.items.push(tag);
    this.wake?.();
  }

  end() {
    this.ended = true;
    this.wake?.();
    this.release();
  }

  drained(): Promise<void> {
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private release() {
    for (const r of this.drainWaiters.splice(0)) r();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<FlvTag> {
    for (;;) {
      const tag = this.items.shift();
      if (tag) {
        if (this.items.length <= QUEUE_HIGH_WATER / 2) this.release();
        yield tag;
        continue;
      }
      this.release();
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = null;
    }
  }
}
