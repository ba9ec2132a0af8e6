import * as mediasoup from "mediasoup";
import type { Producer, Router, RouterRtpCodecCapability, WebRtcServer, WebRtcTransport, Worker } from "mediasoup/types";
import type { Logger } from "../log.ts";

/** H.264 as WebRTC clients and OBS offer it, and as the RTMP tap declares it: constrained baseline, packetization-mode 1. */
export const H264_PROFILE = "42e01f";

/** What every router carries: Opus and H.264 only (the pipeline keeps H.264 as is; Opus becomes AAC for HLS). */
export function mediaCodecs(pt?: { opus: number; h264: number }): RouterRtpCodecCapability[] {
  return [
    { kind: "audio", mimeType: "audio/opus", clockRate: 48000, channels: 2, ...(pt ? { preferredPayloadType: pt.opus } : {}) },
    {
      kind: "video",
      mimeType: "video/H264",
      clockRate: 90000,
      parameters: { "packetization-mode": 1, "profile-level-id": H264_PROFILE, "level-asymmetry-allowed": 1 },
      ...(pt ? { preferredPayloadType: pt.h264 } : {}),
    },
  ];
}

export interface MediaServerOptions {
  /** The worker binary (availability.ts), else mediasoup's own lookup. */
  workerBin?: string;
  /** UDP and TCP port of the WebRtcServer (every WHIP/WHEP session's ICE); 0 = a free one each. */
  port: number;
  listenIp: string;
  /** The address put in ICE candidates: what clients reach (a public IP behind NAT). */
  announcedAddress: string;
  logger: Logger;
}

/**
 * One mediasoup worker per process with one WebRtcServer (a single UDP and
 * TCP port for every session, so a firewall opens two ports, not a range),
 * the ingest router (WHIP producers, the RTMP tap's producers) and one
 * router per stream and payload-type mapping of its viewers (see `viewerRouter`).
 */
export async function createMediaServer(opts: MediaServerOptions) {
  const logger = opts.logger;
  const worker: Worker = await mediasoup.createWorker({ logLevel: "warn", ...(opts.workerBin ? { workerBin: opts.workerBin } : {}) });
  let dead = false;
  worker.on("died", (err) => {
    dead = true;
    logger.error("mediasoup worker died", { err });
  });
  const listen = (protocol: "udp" | "tcp") => ({
    protocol,
    ip: opts.listenIp,
    announcedAddress: opts.announcedAddress,
    ...(opts.port > 0 ? { port: opts.port } : {}),
  });
  const webRtcServer: WebRtcServer = await worker.createWebRtcServer({ listenInfos: [listen("udp"), listen("tcp")] });
  const router: Router = await worker.createRouter({ mediaCodecs: mediaCodecs() });
  // Routers alive in the worker (the ingest router included): /metrics `vidlive_webrtc_routers`.
  let routers = 1;
  worker.observer.on("newrouter", (r) => {
    routers++;
    r.observer.once("close", () => routers--);
  });

  /**
   * A consumer sends with its router's payload types, while a WHEP client
   * offers its own and (JSEP) receives on those. So viewers are served from
   * a router whose Opus and H.264 payload types are the client's, with the
   * stream's producers piped into it once (pipeToRouter inside the worker).
   * Routers are per stream and mapping (every Chrome of a version shares
   * one) and counted by their viewers: the last one to leave closes it (its
   * pipes with it), so unauthenticated offers with ever new payload types
   * cannot pile routers up (issue 23: the worker grew 53 → 96 MB over 1,800).
   */
  const viewerRouters = new Map<string, { router: Promise<Router>; users: number }>();
  const piped = new Map<string, Promise<Producer>>();
  async function viewerRouter(streamId: string, pt: { opus: number; h264: number }): Promise<{ router: Router; release: () => void }> {
    const key = `${streamId} ${pt.opus}/${pt.h264}`;
    let entry = viewerRouters.get(key);
    if (!entry) {
      const created = { router: worker.createRouter({ mediaCodecs: mediaCodecs(pt) }), users: 0 };
      viewerRouters.set(key, created);
      entry = created;
    }
    const held = entry;
    held.users++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      if (--held.users > 0) return;
      if (viewerRouters.get(key) === held) viewerRouters.delete(key);
      void held.router.then((r) => r.close()).catch(() => undefined);
    };
    try {
      return { router: await held.router, release };
    } catch (err) {
      release();
      throw err;
    }
  }
  /** The producer (of the ingest router) as seen in `target`. */
  async function pipe(producer: Producer, target: Router): Promise<Producer> {
    const key = `${producer.id}:${target.id}`;
    let p = piped.get(key);
    if (!p) {
      p = router.pipeToRouter({ producerId: producer.id, router: target, keepId: false }).then((r) => {
        if (!r.pipeProducer) throw new Error("pipeToRouter gave no producer");
        return r.pipeProducer;
      });
      piped.set(key, p);
      producer.observer.once("close", () => piped.delete(key));
      target.observer.once("close", () => piped.delete(key));
    }
    return p;
  }

  async function webRtcTransport(on: Router): Promise<WebRtcTransport> {
    return on.createWebRtcTransport({ webRtcServer, enableUdp: true, enableTcp: true, preferUdp: true });
  }

  return {
    worker,
    router,
    webRtcServer,
    viewerRouter,
    pipe,
    webRtcTransport,
    /** Routers alive in the worker: the ingest router and one per stream and viewer payload-type mapping in use. */
    get routers() {
      return routers;
    },
    get alive() {
      return !dead && !worker.closed;
    },
    /** Ports actually bound (port 0 → random). */
    async ports(): Promise<{ udp: number | null; tcp: number | null }> {
      const dump = await webRtcServer.dump();
      return {
        udp: dump.udpSockets[0]?.port ?? null,
        tcp: dump.tcpServers[0]?.port ?? null,
      };
    },
    close() {
      worker.close();
    },
  };
}

export type MediaServer = Awaited<ReturnType<typeof createMediaServer>>;
