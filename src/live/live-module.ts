import { NO_STREAM_WEBRTC, type StreamWebrtc } from "../../machines/livestream-payload.ts";
import { Elysia } from "elysia";
import type { LiveHlsSegmentInfo } from "../../media/hls/live-hls-packager.ts";
import type { LlHlsPartInfo } from "../../media/hls/ll-hls-packager.ts";
import { createRtmpServer, type RtmpServer } from "../../media/rtmp/rtmp-server.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import { ApiError } from "../http/api-error.ts";
import { clientAddress } from "../http/client-address.ts";
import type { Logger } from "../log.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import { type MediaGate, OPEN_GATE, serveObject } from "../storage/media-routes.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import type { VideoService } from "../videos/video-service.ts";
import { createLeaseRenewer } from "../work/lease-renewer.ts";
import type { WorkQueue } from "../work/work-ledger.ts";
import type { LiveWork } from "./live-work.ts";
import { createBroadcastLeases } from "./broadcast-leases.ts";
import { createLiveFiles } from "./live-files.ts";
import { createLiveWork } from "./live-finalizer.ts";
import { createLiveIngest } from "./live-ingest.ts";
import type { LiveUrls } from "./live-urls.ts";
import type { AssetPlayback } from "../playback/asset-playback.ts";
import { livestreamRoutes } from "./livestream-routes.ts";
import { liveClipRoutes } from "./live-clip-routes.ts";
import { createSrtIngest } from "./srt-ingest.ts";
import { blockingRequest, partRequest } from "./blocking-reload.ts";
import { CROSS_PROCESS_POLL_MS, createPlaylistWaiter } from "./playlist-waiter.ts";
import { createLivestreamService } from "./livestream-service.ts";
import { createStreamKeys } from "./stream-keys.ts";
import { createLiveOutputs } from "./outputs/output-module.ts";
import type { Tx } from "../db/create-database.ts";
import type { NewEvent } from "../outbox/outbox.ts";

/**
 * Everything of live streaming, wired: API, RTMP ingest, live HLS, broadcast
 * leases and the work of a broadcast's end. Time (the booking lead, the idle
 * rule, the reconnect window) belongs to the stream's machine, as durable
 * timers in the work ledger: nothing here schedules anything in memory.
 */
export function createLiveModule(deps: {
  config: Config;
  database: Database;
  runtime: ActorRuntime;
  ledger: WorkQueue<LiveWork>;
  videos: VideoService;
  urls: LiveUrls;
  secret: ServerSecret;
  /** Where live HLS files and recordings are kept (`STORAGE`): hls_url is served from it by any process. */
  objects: ObjectStore;
  logger: Logger;
  /** Wakes the work runner (a finalization was queued here). */
  wakeWork: () => void;
  /** A live playlist served to a client (address + user agent): the live viewers metric (src/ops). */
  onPlaylistServed?: (token: string, client: string) => void;
  /** The playback rules of every media route (src/playback): a signed or restricted stream's live HLS. */
  gate?: MediaGate;
  /** Issue 27: a new stream's playback rules (src/playback), recorded under its live token. */
  playback: AssetPlayback;
  /** Issue 26: simulcast targets pass the outbound guard (src/net) and fire events into the outbox (src/outbox). */
  outputs: {
    checkHost: (host: string) => Promise<void>;
    appendEvents: (tx: Tx, events: NewEvent[]) => Promise<unknown>;
    subscribedEvents?: (tx: Tx, orgId: string) => Promise<ReadonlySet<string>>;
  };
}) {
  const { config, runtime, urls } = deps;
  const logger = deps.logger.child({ component: "live" });
  const files = createLiveFiles({ dataDir: config.dataDir, urls, objects: deps.objects, partMs: config.recordingPartMs });
  const leases = createBroadcastLeases({ database: deps.database, holder: deps.ledger.holder, leaseMs: config.liveBroadcastLeaseMs });
  const keys = createStreamKeys({ database: deps.database, keyDigest: urls.keyDigest });
  const livestreams = createLivestreamService({ runtime, urls, keys, logger, playback: deps.playback, assertSubtitles: deps.videos.assertSubtitles });
  let rtmp: RtmpServer | undefined;
  // A stream's WebRTC fields (URLs, viewers, re-encode), told by src/webrtc once it is wired (`describeWebrtc`).
  let webrtcOf: ((streamId: string) => StreamWebrtc) | undefined;
  const segmentListeners = new Set<(id: string, info: LiveHlsSegmentInfo, segmentSeconds: number) => void>();
  const partListeners = new Set<(id: string, info: LlHlsPartInfo) => void>();
  // LL-HLS blocking reloads: told at once of this process's playlist writes, polling the store for another process's.
  const waiter = createPlaylistWaiter({
    read: async (key) => ((await deps.objects.stat(key)) === null ? null : await new Response(deps.objects.body(key)).text()),
    pollMs: CROSS_PROCESS_POLL_MS,
    onError: (err) => logger.debug("Live playlist read failed (blocking reload)", { err }),
  });
  const ingest = createLiveIngest({
    runtime,
    ledger: deps.ledger,
    leases,
    livestreams,
    urls,
    files,
    logger,
    kick: (key) => rtmp?.kick(key) ?? false,
    onSegment: (id, info, seconds) => {
      for (const l of segmentListeners) l(id, info, seconds);
    },
    onPart: (id, info) => {
      waiter.notify(`live/${urls.token(id)}/index.m3u8`);
      for (const l of partListeners) l(id, info);
    },
  });
  // Simulcast targets (issue 26): declared by the API, sent by this process for the broadcasts it holds.
  const outputs = createLiveOutputs({ config, database: deps.database, secret: deps.secret, ingest, livestreams, logger, ...deps.outputs });
  // SRT callers are relayed into the RTMP server on loopback: one path for both (src/live/srt-ingest.ts).
  const srt = createSrtIngest({
    port: config.srtPort,
    hostname: config.hostname,
    publicHost: config.rtmpHost,
    livestreams,
    rtmp: () => rtmp,
    rtmpUrl: (key) => urls.rtmpUrl(key),
    publishDeadlineMs: config.rtmpPublishDeadlineMs,
    logger,
  });
  const handlers = createLiveWork({
    runtime,
    ledger: deps.ledger,
    leases,
    ingest,
    files,
    videos: deps.videos,
    filesRetentionMs: config.liveFilesRetentionMs,
    logger,
  });
  // One batched renewal for every broadcast this process holds.
  const renewer = createLeaseRenewer({
    renew: (ids) => leases.renew(ids),
    leaseMs: config.liveBroadcastLeaseMs,
    log: logger,
    what: "broadcasts",
    held: () => ingest.held(),
    idOf: (id) => id,
    lost: (ids) => ingest.lost(ids),
  });

  /** Resolves once the stream's broadcast is finalized (no open `live-finalize` work), or after `timeoutMs`. */
  async function finalized(id: string, timeoutMs = 15_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if ((await deps.ledger.openFor(id, ["live-finalize"])) === 0) return;
      await Bun.sleep(50);
    }
    logger.warn("Broadcast not finalized in time", { stream_id: id, timeout_ms: timeoutMs });
  }

  /**
   * A remote live playlist is rewritten at every segment: read whole in one
   * GET and answered with its own length (a size from a HEAD before the GET
   * could be the previous version's). Small; a Range on it is ignored (200).
   */
  async function livePlaylist(key: string): Promise<Response> {
    const bytes = await new Response(deps.objects.body(key)).arrayBuffer().catch(() => null);
    if (!bytes) throw ApiError.notFound();
    return new Response(bytes, {
      headers: { "content-type": "application/vnd.apple.mpegurl", "access-control-allow-origin": "*", "cache-control": "no-cache", "content-length": String(bytes.byteLength) },
    });
  }

  const hlsRoutes = new Elysia({ name: "live-hls-routes" }).get(
    "/live/:token/:file",
    async ({ params, request, server }) => {
      if (!/^[0-9a-f]{40}$/.test(params.token) || !/^[\w-]+\.(m3u8|ts|m4s|mp4)$/.test(params.file)) throw ApiError.notFound();
      const key = `live/${params.token}/${params.file}`;
      const playlist = params.file.endsWith(".m3u8");
      // The stream's playback rules (the service's own live check reads the store, not this route).
      const grant = await (deps.gate ?? OPEN_GATE)(request, params.token, params.file);
      if (grant instanceof Response) return grant;
      // LL-HLS: `_HLS_msn`/`_HLS_part` hold the playlist until it lists them; a hinted part is held until it is written.
      const held = playlist ? await blockingRequest(request, key, waiter, grant) : await partRequest(params.file, key, deps.objects, waiter);
      if (held) return held;
      // From the store, not this process's disk: with STORAGE=s3 the broadcast may be ingested by another process.
      const res = deps.objects.kind === "s3" && playlist && !grant?.token ? await livePlaylist(key) : await serveObject(request, deps.objects, key, { live: true, grant: grant ?? undefined });
      // A player reloads the playlist every segment: each client seen doing so is a viewer.
      const agent = request.headers.get("user-agent") ?? "";
      if (playlist && res.status === 200 && deps.onPlaylistServed) {
        deps.onPlaylistServed(params.token, `${clientAddress(request, server?.requestIP(request)?.address, config.trustProxy)} ${agent}`);
      }
      return res;
    },
    { detail: { hide: true } },
  );

  return {
    livestreams,
    /** Stream key digests (stream-keys.ts; the start-up sealing restores older streams' through it). */
    keys,
    ingest,
    urls,
    handlers,
    plugins: [
      livestreamRoutes({
        livestreams,
        ingest,
        finalized: async (id) => {
          deps.wakeWork();
          await finalized(id);
        },
        removeFiles: (id) => files.removeHls(id),
        webrtc: (id) => webrtcOf?.(id) ?? NO_STREAM_WEBRTC,
        srtUrl: (key) => srt.srtUrl(key),
        outputs,
      }),
      liveClipRoutes({ livestreams, files, objects: deps.objects, videos: deps.videos, dataDir: config.dataDir }),
      outputs.plugin,
    ],
    publicPlugins: [hlsRoutes],
    onSegment(listener: (id: string, info: LiveHlsSegmentInfo, segmentSeconds: number) => void) {
      segmentListeners.add(listener);
      return () => segmentListeners.delete(listener);
    },
    /** Every LL-HLS part published by a broadcast of this process (bench/live.ts: publish → first part). */
    onPart(listener: (id: string, info: LlHlsPartInfo) => void) {
      partListeners.add(listener);
      return () => partListeners.delete(listener);
    },
    get rtmp() {
      return rtmp;
    },
    srt,
    outputs,
    /** src/webrtc: a stream's WebRTC fields here (`whip_url`/`whep_url` or null, `webrtc_viewers`, `webrtc_transcode`). */
    describeWebrtc(describe: (streamId: string) => StreamWebrtc) {
      webrtcOf = describe;
    },
    async start() {
      rtmp = await createRtmpServer({
        port: config.rtmpPort,
        hostname: config.hostname,
        handlers: ingest.handlers,
        maxConnectionsPerIp: config.rtmpMaxConnectionsPerIp,
        publishDeadlineMs: config.rtmpPublishDeadlineMs,
        maxBitrateKbps: config.liveMaxBitrateKbps,
        // Limits that refuse or disconnect someone log at warn (with `msg`); protocol detail stays at debug.
        logger: ({ level, msg, ...entry }) => {
          if (level === "warn") logger.warn(typeof msg === "string" ? msg : "rtmp", entry);
          else logger.debug("rtmp", entry);
        },
      });
      logger.info("RTMP ingest listening", { port: rtmp.port });
      srt.start();
      renewer.start();
      outputs.start();
      // Streams stored by the previous machine version get their timers (the booking, the idle rule, the reconnect window) armed.
      const upgraded = await runtime.upgrade("livestream", { type: "UPGRADED" });
      if (upgraded > 0) logger.info("Live streams upgraded to the current machine", { count: upgraded });
    },
    async stop() {
      renewer.stop();
      await renewer.settled();
      const held = ingest.held();
      // Files closed (with STORAGE=s3 the recordings' last parts uploaded) before the leases are handed over, so the
      // process that finalizes them finds every byte.
      await outputs.stop();
      await srt.stop();
      await rtmp?.stop();
      await ingest.stop();
      await deps.database
        .write(async (tx) => {
          await leases.surrender(tx, held);
          for (const id of held) await deps.ledger.reschedule(tx, `live-watch:${id}`, Date.now());
        })
        .catch((err) => logger.error("Cannot hand over broadcasts at shutdown", { err, count: held.length }));
    },
  };
}

export type LiveModule = ReturnType<typeof createLiveModule>;
