import { Cron } from "croner";
import { Elysia } from "elysia";
import { join } from "node:path";
import { createRtmpServer, type RtmpServer } from "../../media/rtmp/rtmp-server.ts";
import type { LiveHlsSegmentInfo } from "../../media/hls/live-hls-packager.ts";
import type { StreamContext } from "../../machines/livestream-payload.ts";
import type { VideoContext } from "../../machines/video-payload.ts";
import type { ActorRecord, ActorRuntime } from "../actors/actor-runtime.ts";
import type { Config } from "../config.ts";
import { ApiError } from "../http/api-error.ts";
import type { Logger } from "../log.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import { serveFile } from "../storage/media-routes.ts";
import type { VideoService } from "../videos/video-service.ts";
import { createLiveIngest } from "./live-ingest.ts";
import { createLiveUrls } from "./live-urls.ts";
import { livestreamRoutes } from "./livestream-routes.ts";
import { createLivestreamService } from "./livestream-service.ts";

/** Everything of live streaming, wired: API, RTMP ingest, live HLS, scheduling and recordings. */
export function createLiveModule(deps: { config: Config; runtime: ActorRuntime; videos: VideoService; secret: ServerSecret; logger: Logger }) {
  const { config, runtime } = deps;
  const logger = deps.logger.child({ component: "live" });
  const urls = createLiveUrls(config, deps.secret);
  const livestreams = createLivestreamService({ runtime, urls, slots: { pool: () => config.liveSlots, perOrg: () => config.liveSlotsPerOrg }, logger });
  let rtmp: RtmpServer | undefined;
  const ingest = createLiveIngest({
    runtime,
    livestreams,
    videos: deps.videos,
    urls,
    dataDir: config.dataDir,
    reconnectWindowMs: config.liveReconnectMs,
    logger,
    kick: (key) => rtmp?.kick(key) ?? false,
    onSegment: (id, info, seconds) => {
      for (const l of segmentListeners) l(id, info, seconds);
    },
  });

  const segmentListeners = new Set<(id: string, info: LiveHlsSegmentInfo, segmentSeconds: number) => void>();
  const bookings = new Map<string, Cron>();
  function arm(record: ActorRecord<StreamContext>) {
    const at = record.context.scheduledAt;
    if (!at || record.status !== "SCHEDULED") return;
    const fireAt = new Date(Math.max(Date.now() + 10, Date.parse(at) - config.liveScheduleLeadMs));
    bookings.get(record.id)?.stop();
    const job = new Cron(fireAt, { catch: (err) => logger.error("Cannot ready a booked stream", { err, stream_id: record.id }) }, async () => {
      bookings.delete(record.id);
      await livestreams.makeReady(record.id);
      logger.info("Booked stream is ready", { stream_id: record.id, org_id: record.orgId });
    });
    bookings.set(record.id, job);
  }

  // The documented rule for a stream nobody publishes to: it ends LIVE_IDLE_TIMEOUT_MS after it became ready (or its booking).
  async function sweepIdle() {
    const ready = await runtime.unfinished<StreamContext>("livestream", ["SCHEDULED", "LIVE", "ENDED", "ERROR", "DELETED"]);
    const now = Date.now();
    for (const rec of ready) {
      if (rec.status !== "READY_TO_STREAM" || ingest.isBroadcasting(rec.id)) continue;
      const since = Math.max(rec.updatedAt, rec.context.scheduledAt ? Date.parse(rec.context.scheduledAt) : 0);
      if (now - since >= config.liveIdleTimeoutMs) await ingest.endIdle(rec.context);
    }
  }
  let sweeper: Cron | undefined;

  // A recording's transcode finishing makes the stream's playback_url and ends its `recording.transcoding`.
  // (Missed here, e.g. by another process, the stream catches up when it is read: livestreams.get.)
  const unsubscribe = runtime.subscribe((result) => {
    const rec = result.record as ActorRecord<VideoContext>;
    if (rec.kind !== "video" || (rec.status !== "COMPLETED" && rec.status !== "ERROR") || result.previousStatus === rec.status) return;
    const stream = rec.context.stream;
    if (!stream) return;
    const playbackUrl = rec.status === "COMPLETED" ? (rec.context.outcome?.url ?? null) : null;
    runtime.send("livestream", stream.id, { type: "RECORDING_TRANSCODED", playbackUrl }).catch((err) => logger.error("Cannot record the stream's recording state", { err, stream_id: stream.id }));
  });

  const hlsRoutes = new Elysia({ name: "live-hls-routes" }).get(
    "/live/:token/:file",
    ({ params, request }) => {
      if (!/^[0-9a-f]{40}$/.test(params.token) || !/^[\w-]+\.(m3u8|ts|m4s|mp4)$/.test(params.file)) throw ApiError.notFound();
      return serveFile(request, join(config.dataDir, "live", params.token, params.file), { live: true });
    },
    { detail: { hide: true } },
  );

  return {
    livestreams,
    ingest,
    urls,
    plugins: [livestreamRoutes({ livestreams, ingest, onScheduled: arm })],
    publicPlugins: [hlsRoutes],
    onSegment(listener: (id: string, info: LiveHlsSegmentInfo, segmentSeconds: number) => void) {
      segmentListeners.add(listener);
      return () => segmentListeners.delete(listener);
    },
    get rtmp() {
      return rtmp;
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
      config.rtmpPort = rtmp.port;
      logger.info("RTMP ingest listening", { port: rtmp.port });
      const recovered = await ingest.recover();
      if (recovered > 0) logger.info("Ended broadcasts cut off by a restart", { count: recovered });
      for (const rec of await runtime.unfinished<StreamContext>("livestream", ["READY_TO_STREAM", "LIVE", "ENDED", "ERROR", "DELETED"])) arm(rec);
      // Every second is checked, but the sweep runs at most every quarter of the idle timeout (1-15 s).
      const every = Math.min(15, Math.max(1, Math.floor(config.liveIdleTimeoutMs / 4000)));
      sweeper = new Cron("* * * * * *", { protect: true, interval: every, catch: (err) => logger.error("Cannot sweep idle live streams", { err }) }, sweepIdle);
    },
    async stop() {
      sweeper?.stop();
      for (const job of bookings.values()) job.stop();
      bookings.clear();
      unsubscribe();
      await rtmp?.stop();
      await ingest.stop();
    },
  };
}

export type LiveModule = ReturnType<typeof createLiveModule>;
