import { appendFile, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { AuthorizeResult, CloseReason, PublishHandlers, PublishRequest } from "../../media/rtmp/publish-handlers.ts";
import type { RecordingInfo, StreamContext } from "../../machines/livestream-payload.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Logger } from "../log.ts";
import type { VideoService } from "../videos/video-service.ts";
import type { LiveHlsSegmentInfo } from "../../media/hls/live-hls-packager.ts";
import { createBroadcast, type Broadcast } from "./broadcast.ts";
import { observePlayback } from "./live-player.ts";
import type { LiveUrls } from "./live-urls.ts";
import type { LivestreamService } from "./livestream-service.ts";
import { probeRecording } from "./recording-probe.ts";

type EndTrigger = "pipeline" | "explicit";

interface Live {
  broadcast: Broadcast;
  ctx: StreamContext;
  reconnectTimer?: ReturnType<typeof setTimeout>;
  player?: AbortController;
  observed: boolean;
  ending?: Promise<void>;
}

/**
 * Bridges RTMP publishes to stream actors: authorizes a publish, feeds the
 * recording and the live HLS packager, watches playback, and ends the
 * broadcast when the publisher is gone for good or an explicit end arrives.
 */
export function createLiveIngest(deps: {
  runtime: ActorRuntime;
  livestreams: LivestreamService;
  videos: VideoService;
  urls: LiveUrls;
  dataDir: string;
  reconnectWindowMs: number;
  logger: Logger;
  kick: (streamKey: string) => boolean;
  /** Every published segment, for metrics (bench/live.ts measures keyframe-to-playlist delay with it). */
  onSegment?: (streamId: string, info: LiveHlsSegmentInfo, segmentSeconds: number) => void;
}) {
  const { runtime, logger } = deps;
  const live = new Map<string, Live>();
  const flvPath = (id: string) => join(deps.dataDir, "recordings", `${id}.flv`);
  const hlsDir = (id: string) => join(deps.dataDir, "live", deps.urls.token(id));

  function startPlayer(entry: Live) {
    if (entry.observed || entry.player) return;
    entry.player = new AbortController();
    observePlayback(entry.ctx.hlsUrl, { signal: entry.player.signal })
      .then(async (seen) => {
        if (!seen) return;
        entry.observed = true;
        await runtime.send("livestream", entry.ctx.id, { type: "MEDIA_OBSERVED", at: new Date().toISOString() });
        logger.info("Live stream observed playing", { stream_id: entry.ctx.id, org_id: entry.ctx.orgId });
      })
      .catch((err) => logger.error("Cannot observe live playback", { err, stream_id: entry.ctx.id }));
  }

  /** Ends a broadcast once: closes files, registers the recording, tells the actor. */
  async function finish(ctx: StreamContext, trigger: EndTrigger, entry?: Live): Promise<void> {
    entry?.player?.abort();
    if (entry?.reconnectTimer) clearTimeout(entry.reconnectTimer);
    await entry?.broadcast.end();
    const at = new Date().toISOString();
    const probe = await probeRecording(flvPath(ctx.id));
    const info = entry?.broadcast.info();
    const durationSeconds = entry ? entry.broadcast.durationSeconds() : probe.hasMedia ? await recoveredDuration(ctx, probe.durationSeconds) : null;
    let recording: RecordingInfo | null = null;
    if (probe.hasMedia) {
      const video = await deps.videos.registerRecording({
        orgId: ctx.orgId,
        title: ctx.title,
        stream: { id: ctx.id, stream_key: ctx.streamKey },
        sourcePath: flvPath(ctx.id),
        tags: ctx.tags,
        dedupeKey: `recording:${ctx.id}`,
      });
      const width = info?.width ?? probe.width;
      const height = info?.height ?? probe.height;
      recording = {
        asset_id: video.id,
        transcoding: true,
        duration_seconds: Math.round(probe.durationSeconds) || (durationSeconds ?? 0),
        resolution: width && height ? `${width}x${height}` : null,
        width: width ?? null,
        height: height ?? null,
      };
    }
    if (trigger === "pipeline") {
      await runtime.send("livestream", ctx.id, { type: "PIPELINE_ENDED", at, durationSeconds, transcodingInSecs: null, recording });
    } else if (recording) {
      await runtime.send("livestream", ctx.id, { type: "RECORDING_ATTACHED", recording });
    }
    live.delete(ctx.id);
    logger.info("Live broadcast ended", { stream_id: ctx.id, org_id: ctx.orgId, trigger, recording_id: recording?.asset_id ?? null, duration_s: durationSeconds });
  }

  function end(entry: Live, trigger: EndTrigger): Promise<void> {
    entry.ending ??= finish(entry.ctx, trigger, entry).catch((err) => {
      logger.error("Cannot end live broadcast", { err, stream_id: entry.ctx.id });
    });
    return entry.ending;
  }

  /**
   * A broadcast cut off by a restart: on air from the first media (the
   * recording's length before its last write, or the observed start if
   * earlier) until the recording was last written.
   */
  async function recoveredDuration(ctx: StreamContext, mediaSeconds: number): Promise<number | null> {
    const written = await stat(flvPath(ctx.id)).then(
      (s) => s.mtimeMs,
      () => null,
    );
    if (written === null) return null;
    const observed = ctx.startedAt ? Date.parse(ctx.startedAt) : Infinity;
    return Math.max(0, Math.round((written - Math.min(observed, written - mediaSeconds * 1000)) / 1000));
  }

  function publisherGone(entry: Live, reason: CloseReason) {
    entry.broadcast.markLeft();
    if (entry.ending) return;
    logger.info("Publisher left; waiting for a reconnect", { stream_id: entry.ctx.id, reason, window_ms: deps.reconnectWindowMs });
    entry.reconnectTimer = setTimeout(() => {
      if (!entry.broadcast.publishing) void end(entry, "pipeline");
    }, deps.reconnectWindowMs);
  }

  const handlers: PublishHandlers = {
    async authorize(req: PublishRequest): Promise<AuthorizeResult> {
      const refuse = (reason: string): AuthorizeResult => {
        logger.warn("Publish refused", { reason, remote: req.remoteAddress });
        return { ok: false, reason };
      };
      if (!deps.urls.verifySignature(req.streamKey, req.query.get("sig"))) return refuse("Bad stream key or signature.");
      const record = await deps.livestreams.byStreamKey(req.streamKey);
      if (!record) return refuse("Bad stream key or signature.");
      const ctx = record.context;
      let entry = live.get(ctx.id);
      if (record.status === "SCHEDULED") return refuse("The stream is booked for later and not ready yet.");
      if (record.status !== "READY_TO_STREAM" && record.status !== "LIVE") return refuse("The stream has ended.");
      if (entry?.ending) return refuse("The stream has ended.");
      if (entry?.broadcast.publishing) return refuse("Another encoder is already publishing to this stream.");
      if (!entry) {
        entry = {
          ctx,
          observed: record.status === "LIVE",
          broadcast: createBroadcast({
            streamId: ctx.id,
            latency: ctx.latency,
            flvPath: flvPath(ctx.id),
            hlsDir: hlsDir(ctx.id),
            logger,
            onSegment: (info) => {
              startPlayer(entry!);
              deps.onSegment?.(ctx.id, info, entry!.broadcast.segmentSeconds);
            },
          }),
        };
        live.set(ctx.id, entry);
      }
      if (entry.reconnectTimer) clearTimeout(entry.reconnectTimer);
      try {
        await entry.broadcast.startSession();
      } catch (err) {
        entry.broadcast.publishing = false;
        logger.error("Cannot open the broadcast's recording or playlist", { err, stream_id: ctx.id });
        return refuse("The stream could not be started.");
      }
      const current = entry;
      logger.info("Publish accepted", { stream_id: ctx.id, org_id: ctx.orgId, session: current.broadcast.sessions, remote: req.remoteAddress });
      return {
        ok: true,
        logTags: { stream_id: ctx.id, org_id: ctx.orgId },
        sink: {
          onMessage: (msg) => current.broadcast.push(msg),
          onClose: (reason) => publisherGone(current, reason),
        },
      };
    },
  };

  return {
    handlers,
    hlsDir,

    /** POST /end/: ENDED (full shape) now; the publisher is disconnected and the recording attached after. */
    async endExplicitly(ctx: StreamContext): Promise<void> {
      const entry = live.get(ctx.id);
      const durationSeconds = entry ? entry.broadcast.durationSeconds() : null;
      await runtime.send("livestream", ctx.id, { type: "END_REQUESTED", at: new Date().toISOString(), durationSeconds });
      if (entry) {
        entry.ending ??= Promise.resolve()
          .then(() => {
            deps.kick(ctx.streamKey);
            return finish(ctx, "explicit", entry);
          })
          .catch((err) => logger.error("Cannot end live broadcast", { err, stream_id: ctx.id }));
      }
    },

    /** Resolves once an ending in progress (explicit or pipeline) has attached the recording and announced it. */
    async settled(id: string): Promise<void> {
      await live.get(id)?.ending;
    },

    /** Ends streams idle past their booking (no publisher ever arrived): never broadcast, so no duration. */
    async endIdle(ctx: StreamContext): Promise<void> {
      if (live.has(ctx.id)) return;
      await runtime.send("livestream", ctx.id, { type: "PIPELINE_ENDED", at: new Date().toISOString(), durationSeconds: null, transcodingInSecs: null, recording: null });
      logger.info("Idle live stream ended", { stream_id: ctx.id, org_id: ctx.orgId });
    },

    isBroadcasting: (id: string) => live.has(id),

    /**
     * After a restart, a broadcast that was on air cannot resume (its publisher
     * was cut off with the old process): it is ended from what is on disk, and
     * the playlist gets its ENDLIST, so events fire once and the recording stays.
     */
    async recover(): Promise<number> {
      const open = await runtime.unfinished<StreamContext>("livestream", ["ENDED", "ERROR", "DELETED", "SCHEDULED"]);
      let n = 0;
      for (const rec of open) {
        const { hasMedia } = await probeRecording(flvPath(rec.id));
        if (rec.status !== "LIVE" && !hasMedia) continue;
        const playlist = join(hlsDir(rec.id), "index.m3u8");
        const text = await readFile(playlist, "utf8").catch(() => null);
        if (text !== null && !text.includes("#EXT-X-ENDLIST")) await appendFile(playlist, "#EXT-X-ENDLIST\n");
        await finish(rec.context, "pipeline");
        n++;
      }
      return n;
    },

    async removeFiles(id: string) {
      await rm(hlsDir(id), { recursive: true, force: true });
    },

    async stop() {
      for (const entry of live.values()) {
        entry.player?.abort();
        if (entry.reconnectTimer) clearTimeout(entry.reconnectTimer);
        await entry.broadcast.end().catch(() => undefined);
      }
      live.clear();
    },
  };
}

export type LiveIngest = ReturnType<typeof createLiveIngest>;
