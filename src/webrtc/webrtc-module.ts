import { timingSafeEqual } from "node:crypto";
import type { Consumer, Producer, WebRtcTransport } from "mediasoup/types";
import type { StreamWebrtc } from "../../machines/livestream-payload.ts";
import type { Config } from "../config.ts";
import type { LiveModule } from "../live/live-module.ts";
import { randomToken } from "../ids.ts";
import type { Logger } from "../log.ts";
import type { WebrtcAvailability } from "./availability.ts";
import type { WebrtcErrorCode } from "./webrtc-answers.ts";
import { RELAY_TOKEN_PARAM, type Seat } from "../../media/rtmp/rtmp-server.ts";
import { relayBroadcast, type RtmpRelay } from "./flv-to-rtp.ts";
import { createMediaServer, type MediaServer } from "./media-server.ts";
import { pushToRtmp, type RtmpPush } from "./rtp-to-rtmp.ts";
import { SdpError } from "./sdp.ts";
import { acceptPublishOffer } from "./whip-session.ts";
import { acceptPlayOffer, type MediaSource } from "./whep-session.ts";

/** A publish or play refused: the route answers it in the envelope. */
export class WebrtcRefusal extends Error {
  constructor(
    /** The codes a session can be refused with (the route's own: a wrong media type or method). */
    readonly code: Exclude<WebrtcErrorCode, "UNSUPPORTED_MEDIA_TYPE" | "METHOD_NOT_ALLOWED">,
    message: string,
  ) {
    super(message);
  }
}

interface PublishSession {
  id: string;
  streamId: string;
  transport: WebRtcTransport;
  video: Producer;
  audio?: Producer;
  push?: RtmpPush;
  /** Its place in the RTMP server's connection limits (counted against the WHIP client's address); its relay is not counted again. */
  seat: Seat;
  closed: boolean;
}

interface ViewSession {
  id: string;
  streamId: string;
  transport: WebRtcTransport;
  consumers: Consumer[];
  /** Gives its viewer router back (closed with its last viewer). */
  release: () => void;
}

/** A WebRTC client that connects nothing within this is dropped (its 201 was never used). */
const CONNECT_DEADLINE_MS = 20_000;

const sameToken = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * WHIP ingest and WHEP playback for the streams this process broadcasts.
 * The media server (a mediasoup worker) starts on the first WHIP or WHEP
 * request, not at boot: a service nobody plays by WebRTC spawns no worker.
 *
 * A WHIP publish is relayed into our own RTMP server (rtp-to-rtmp.ts), so it
 * is an RTMP publish for everything else (events, HLS, recording, slots,
 * limits). WHEP viewers consume the WHIP producers directly, or, for an RTMP
 * publish, the producers of a relay fed by the broadcast's tags (flv-to-rtp.ts),
 * started with the first viewer and stopped with the last.
 */
export function createWebrtcModule(deps: { config: Config; availability: WebrtcAvailability; live: LiveModule; logger: Logger }) {
  const { config, live } = deps;
  const logger = deps.logger.child({ component: "webrtc" });
  let server: Promise<MediaServer> | undefined;
  let running: MediaServer | null = null; // once started: read synchronously by /metrics
  let failure: string | null = deps.availability.available ? null : deps.availability.reason;
  const publishes = new Map<string, PublishSession>(); // by stream id
  const viewers = new Map<string, Map<string, ViewSession>>(); // stream id → session id → viewer
  const relays = new Map<string, Promise<RtmpRelay>>();
  const tokens = new Map<string, string>(); // stream id → its playback token (HMAC; cached)

  const tokenOf = (id: string) => {
    let t = tokens.get(id);
    if (!t) {
      t = live.urls.token(id);
      tokens.set(id, t);
    }
    return t;
  };

  async function media(): Promise<MediaServer> {
    if (failure) throw new WebrtcRefusal("WEBRTC_UNAVAILABLE", `WebRTC is not available on this server: ${failure} (an operator builds it with npm run setup:webrtc).`);
    server ??= createMediaServer({
      workerBin: deps.availability.available ? deps.availability.workerBin : undefined,
      port: config.webrtcPort,
      listenIp: config.webrtcListenIp,
      announcedAddress: config.webrtcAnnouncedIp,
      logger,
    }).then(
      async (s) => {
        s.worker.on("died", () => {
          failure = "the mediasoup worker died";
        });
        running = s;
        logger.info("WebRTC media server started", { ...(await s.ports()), announced_ip: config.webrtcAnnouncedIp });
        return s;
      },
      (err) => {
        failure = `the mediasoup worker cannot start (${err instanceof Error ? err.message : String(err)})`;
        logger.error("WebRTC media server cannot start", { err });
        server = undefined;
        throw new WebrtcRefusal("WEBRTC_UNAVAILABLE", `WebRTC is not available on this server: ${failure}.`);
      },
    );
    return server;
  }

  /** Ends the session's transport when the client goes away or never connects. */
  function watchTransport(transport: WebRtcTransport, end: () => void) {
    const deadline = setTimeout(() => {
      if (transport.dtlsState !== "connected") end();
    }, CONNECT_DEADLINE_MS);
    transport.on("dtlsstatechange", (state) => {
      logger.debug("WebRTC DTLS state", { transport: transport.id, state });
      if (state === "failed" || state === "closed") end();
    });
    transport.on("icestatechange", (state) => {
      logger.debug("WebRTC ICE state", { transport: transport.id, state });
      // "disconnected": no ICE consent from the client for 30 s (a closed tab, a lost network); without ICE restarts it is over.
      if (state === "closed" || state === "disconnected") end();
    });
    transport.observer.once("close", () => {
      clearTimeout(deadline);
      end();
    });
  }

  function endPublish(session: PublishSession, why: string) {
    if (session.closed) return;
    session.closed = true;
    if (publishes.get(session.streamId) === session) publishes.delete(session.streamId);
    session.push?.stop();
    // Held until the relay has left the RTMP server (its connection counts nowhere: the seat is its place).
    void (session.push?.exited ?? Promise.resolve()).finally(() => session.seat.release());
    if (!session.transport.closed) session.transport.close();
    logger.info("WHIP session ended", { stream_id: session.streamId, session: session.id, why });
  }

  function viewerGone(v: ViewSession) {
    const set = viewers.get(v.streamId);
    if (!set?.delete(v.id)) return;
    if (!v.transport.closed) v.transport.close();
    v.release();
    if (set.size === 0) noViewers(v.streamId);
  }

  /** The last viewer of an RTMP broadcast left: its relay (an ffmpeg) stops. */
  function noViewers(streamId: string) {
    viewers.delete(streamId);
    const relay = relays.get(streamId);
    relays.delete(streamId);
    void relay?.then((r) => r.stop()).catch(() => undefined);
  }

  /** The stream published or broadcast here whose playback token is `token`. */
  function heldStream(token: string): string | undefined {
    return [...publishes.keys(), ...live.ingest.held()].find((id) => sameToken(tokenOf(id), token));
  }

  async function sourceFor(streamId: string, server: MediaServer): Promise<MediaSource> {
    const p = publishes.get(streamId);
    const broadcast = live.ingest.local(streamId)?.broadcast;
    // A WHIP publish plays from its own producers, unless its H.264 cannot go to WebRTC as sent (B-frames from a
    // non-browser encoder): then, like an RTMP publish, from the broadcast's relay, which re-encodes it.
    if (p && !(broadcast?.publishing && broadcast.webrtcFit().unfit)) return { video: p.video, audio: p.audio };
    if (!broadcast?.publishing) throw new WebrtcRefusal("STREAM_NOT_LIVE", "The stream has no publisher right now.");
    let relay = relays.get(streamId);
    if (!relay) {
      relay = relayBroadcast({
        router: server.router,
        broadcast,
        logger,
        streamId,
        onEnd: () => {
          relays.delete(streamId);
        },
      });
      relays.set(streamId, relay);
      relay.catch(() => relays.delete(streamId));
    }
    const r = await relay;
    return { video: r.video, audio: r.audio };
  }

  return {
    /** Whether WHIP/WHEP can work here (the worker built and, once started, alive): `features.webrtc`. */
    get available() {
      return failure === null;
    },
    /** WHEP viewers of a stream in this process (`webrtc_viewers`). */
    viewerCount: (streamId: string) => viewers.get(streamId)?.size ?? 0,
    /** Issue 28 (src/analytics): every stream with WHEP viewers in this process, and how many. */
    viewerCounts: (): Array<[string, number]> => [...viewers].map(([id, set]) => [id, set.size] as [string, number]).filter(([, n]) => n > 0),
    /**
     * A stream's WebRTC fields here: the URLs only where WebRTC can run, its
     * viewers, and whether WHEP viewers get its video re-encoded (the
     * broadcast's H.264 cannot go to WebRTC as sent: media/flv/webrtc-fit.ts).
     */
    describe: (streamId: string): StreamWebrtc => {
      const broadcast = live.ingest.local(streamId)?.broadcast;
      return {
        available: failure === null,
        viewers: viewers.get(streamId)?.size ?? 0,
        transcode: broadcast?.publishing ? broadcast.webrtcFit().unfit : null,
      };
    },
    publishing: (streamId: string) => publishes.has(streamId),
    /** This process's WHIP publishers, WHEP viewers and mediasoup routers (the /metrics gauges; routers 0 before the worker starts). */
    totals: () => ({ publishers: publishes.size, viewers: [...viewers.values()].reduce((n, set) => n + set.size, 0), routers: running?.routers ?? 0 }),

    /**
     * WHIP: authorizes `streamKey` for the stream of `token` (the same digest
     * lookup as RTMP, the token compared in constant time), refuses what RTMP
     * refuses (booked, ended, a publisher already on), holds a place under
     * the RTMP connection limits for `clientAddress` (the WHIP client's, not
     * the relay's 127.0.0.1: 429 RATE_LIMITED over RTMP_MAX_CONNECTIONS_PER_IP,
     * 503 NO_SLOTS_AVAILABLE when the server is full, both before any 201),
     * answers the offer and starts the relay into RTMP.
     */
    async publish(
      token: string,
      streamKey: string,
      offer: string,
      sessionUrl: (sessionId: string) => string,
      clientAddress = "127.0.0.1",
    ): Promise<{ answer: string; location: string; sessionId: string; streamId: string }> {
      const record = streamKey ? await live.livestreams.byStreamKey(streamKey) : null;
      if (!record || !sameToken(tokenOf(record.id), token)) throw new WebrtcRefusal("INVALID_STREAM_KEY", "Invalid stream key for this WHIP endpoint (Authorization: Bearer <stream_key>).");
      const s = await media();
      const id = record.id;
      if (record.tags.has("booked")) throw new WebrtcRefusal("STREAM_NOT_ACCEPTING", "The stream is booked for later and not ready yet.");
      if (!record.tags.has("acceptsPublish")) throw new WebrtcRefusal("STREAM_NOT_ACCEPTING", "The stream has ended.");
      const local = live.ingest.local(id);
      if (local?.closing) throw new WebrtcRefusal("STREAM_NOT_ACCEPTING", "The stream has ended.");
      if (publishes.has(id) || local?.broadcast.publishing) throw new WebrtcRefusal("STREAM_NOT_ACCEPTING", "Another encoder is already publishing to this stream.");
      const rtmp = live.rtmp;
      if (!rtmp) throw new WebrtcRefusal("WEBRTC_UNAVAILABLE", "RTMP ingest is not running on this server: WHIP is relayed into it.");
      // Admitted or refused before the 201: the relay's own loopback connection is then let in on this seat.
      const reserved = rtmp.reserve(clientAddress);
      if (!reserved.ok) {
        logger.warn("WHIP publish refused: RTMP connection limit", { stream_id: id, reason: reserved.reason, limit: reserved.limit });
        if (reserved.reason === "per-ip limit") {
          throw new WebrtcRefusal("RATE_LIMITED", `Too many ingest connections from this address (at most ${reserved.limit}, RTMP and WHIP together); end one first.`);
        }
        throw new WebrtcRefusal("NO_SLOTS_AVAILABLE", "Live ingest capacity is exhausted. Retry shortly.");
      }
      const seat = reserved.seat;
      let published: Awaited<ReturnType<typeof acceptPublishOffer>>;
      try {
        published = await acceptPublishOffer(s, offer);
      } catch (err) {
        seat.release();
        if (err instanceof SdpError) throw new WebrtcRefusal("VALIDATION_ERROR", err.message);
        throw err;
      }
      // Re-checked after the awaits: a second WHIP racing this one is refused.
      if (publishes.has(id)) {
        seat.release();
        published.transport.close();
        throw new WebrtcRefusal("STREAM_NOT_ACCEPTING", "Another encoder is already publishing to this stream.");
      }
      const session: PublishSession = { id: randomToken(16), streamId: id, transport: published.transport, video: published.video, audio: published.audio, seat, closed: false };
      publishes.set(id, session);
      watchTransport(session.transport, () => endPublish(session, "transport closed"));
      // Into our own RTMP server on loopback, with the stream's signed push URL.
      const url = new URL(record.context.rtmpUrl);
      url.hostname = "127.0.0.1";
      url.port = String(rtmp.port);
      url.searchParams.set(RELAY_TOKEN_PARAM, seat.token);
      try {
        session.push = await pushToRtmp({ router: s.router, video: session.video, audio: session.audio, rtmpUrl: url.toString(), logger, streamId: id });
      } catch (err) {
        endPublish(session, "relay failed");
        throw err;
      }
      // Closed while the relay started (transport gone, worker died, stop): endPublish ran without a relay to stop.
      if (session.closed) {
        session.push.stop();
        throw new WebrtcRefusal("WEBRTC_UNAVAILABLE", "The WebRTC session closed while it was starting.");
      }
      void session.push.exited.then(() => endPublish(session, "relay ended"));
      logger.info("WHIP session started", { stream_id: id, org_id: record.orgId, session: session.id, audio: !!session.audio });
      return { answer: published.answer, location: sessionUrl(session.id), sessionId: session.id, streamId: id };
    },

    /** DELETE on a WHIP session URL: the publisher leaves (the stream's reconnect window, then its end, as for RTMP). */
    endPublish(token: string, sessionId: string): boolean {
      for (const p of publishes.values()) {
        if (p.id === sessionId && sameToken(tokenOf(p.streamId), token)) {
          endPublish(p, "DELETE");
          return true;
        }
      }
      return false;
    },

    /** WHEP: a viewer of the stream of `token`, if it is on air in this process and under its viewer limit. */
    async play(token: string, offer: string, sessionUrl: (sessionId: string) => string): Promise<{ answer: string; location: string; sessionId: string; streamId: string }> {
      const s = await media();
      const streamId = heldStream(token);
      if (!streamId) throw new WebrtcRefusal("STREAM_NOT_LIVE", "The stream is not on air on this server.");
      const set = viewers.get(streamId) ?? new Map<string, ViewSession>();
      if (set.size >= config.webrtcMaxViewersPerStream) {
        throw new WebrtcRefusal("VIEWER_LIMIT_REACHED", `The stream has its maximum of ${config.webrtcMaxViewersPerStream} WebRTC viewers; its hls_url plays without limit.`);
      }
      const id = randomToken(16);
      // Counted before the awaits, so concurrent offers cannot pass the limit together.
      const placeholder = { id, streamId } as ViewSession;
      set.set(id, placeholder);
      viewers.set(streamId, set);
      try {
        const source = await sourceFor(streamId, s);
        const played = await acceptPlayOffer(s, streamId, offer, source).catch((err) => {
          if (err instanceof SdpError) throw new WebrtcRefusal("VALIDATION_ERROR", err.message);
          throw err;
        });
        const v: ViewSession = { id, streamId, transport: played.transport, consumers: played.consumers, release: played.release };
        set.set(id, v);
        watchTransport(v.transport, () => viewerGone(v));
        for (const c of v.consumers) c.on("producerclose", () => viewerGone(v));
        return { answer: played.answer, location: sessionUrl(id), sessionId: id, streamId };
      } catch (err) {
        set.delete(id);
        if (set.size === 0) noViewers(streamId);
        throw err;
      }
    },

    endPlay(token: string, sessionId: string): boolean {
      for (const set of viewers.values()) {
        const v = set.get(sessionId);
        if (v?.transport && sameToken(tokenOf(v.streamId), token)) {
          viewerGone(v);
          return true;
        }
      }
      return false;
    },

    /** Ports the WebRtcServer bound (null before the first session). */
    async ports() {
      return server ? (await server).ports() : null;
    },

    async stop() {
      const open = [...publishes.values()];
      for (const p of open) endPublish(p, "shutdown");
      await Promise.all(open.map((p) => p.push?.exited));
      for (const r of relays.values()) void r.then((x) => x.stop()).catch(() => undefined);
      if (server) (await server.catch(() => null))?.close();
    },
  };
}

export type WebrtcModule = ReturnType<typeof createWebrtcModule>;
