import type { AuthorizeResult, CloseReason, PublishHandlers, PublishRequest } from "../../media/rtmp/publish-handlers.ts";
import type { LiveHlsSegmentInfo } from "../../media/hls/live-hls-packager.ts";
import type { LlHlsPartInfo } from "../../media/hls/ll-hls-packager.ts";
import type { StreamContext } from "../../machines/livestream-payload.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Logger } from "../log.ts";
import type { WorkQueue } from "../work/work-ledger.ts";
import type { LiveWork } from "./live-work.ts";
import { createBroadcast, type Broadcast } from "./broadcast.ts";
import type { BroadcastLeases } from "./broadcast-leases.ts";
import type { LiveFiles } from "./live-files.ts";
import { observePlayback } from "./live-player.ts";
import type { LivestreamService } from "./livestream-service.ts";
import type { LiveUrls } from "./live-urls.ts";

/** A broadcast this process holds: the publisher's sink, the open files, the player watching it. */
export interface LocalBroadcast {
  broadcast: Broadcast;
  ctx: StreamContext;
  player?: AbortController;
  observed: boolean;
  /** Set once finalization has taken the broadcast: no publisher is accepted any more. */
  closing: boolean;
}

/**
 * Bridges RTMP publishes to stream actors: authorizes a publish (taking the
 * broadcast's lease and telling the stream in one transaction), feeds the
 * recording and the live HLS packager, watches playback, and tells the stream
 * when the publisher leaves. What happens next (the reconnect window, the
 * end) belongs to the stream's machine and the `live-finalize` work.
 */
export function createLiveIngest(deps: {
  runtime: ActorRuntime;
  ledger: WorkQueue<LiveWork>;
  leases: BroadcastLeases;
  livestreams: LivestreamService;
  urls: LiveUrls;
  files: LiveFiles;
  logger: Logger;
  kick: (streamKey: string) => boolean;
  /** Every published segment, for metrics (bench/live.ts measures keyframe-to-playlist delay with it). */
  onSegment?: (streamId: string, info: LiveHlsSegmentInfo, segmentSeconds: number) => void;
  /** Every LL-HLS part published (its playlist written): the blocking reloads waiting here answer at once. */
  onPart?: (streamId: string, info: LlHlsPartInfo) => void;
}) {
  const { runtime, logger, leases } = deps;
  const live = new Map<string, LocalBroadcast>();

  function startPlayer(entry: LocalBroadcast) {
    if (entry.observed || entry.player) return;
    entry.player = new AbortController();
    // From the object store, as the hls_url route serves it: never through our own BASE_URL.
    observePlayback((name) => deps.files.readHls(entry.ctx.id, name), {
      signal: entry.player.signal,
      onSlow: (why, err) => logger.warn("Live stream not observed playing yet", { stream_id: entry.ctx.id, org_id: entry.ctx.orgId, why, err }),
    })
      .then(async (seen) => {
        if (!seen) return;
        entry.observed = true;
        await runtime.send("livestream", entry.ctx.id, { type: "MEDIA_OBSERVED", at: new Date().toISOString() });
        logger.info("Live stream observed playing", { stream_id: entry.ctx.id, org_id: entry.ctx.orgId });
      })
      .catch((err) => logger.error("Cannot observe live playback", { err, stream_id: entry.ctx.id }));
  }

  function publisherGone(entry: LocalBroadcast, reason: CloseReason) {
    entry.broadcast.markLeft();
    if (entry.closing) return;
    logger.info("Publisher left; waiting for a reconnect", { stream_id: entry.ctx.id, reason });
    const id = entry.ctx.id;
    leases
      .markLeft(id)
      .then(() => runtime.send("livestream", id, { type: "PUBLISHER_LEFT" }))
      .catch((err) => logger.error("Cannot record that the publisher left", { err, stream_id: id }));
  }

  /**
   * Takes the broadcast's lease and tells the stream a publisher started, in
   * one transaction; queues the watch on the lease. Refused when another
   * process holds the broadcast, or the stream does not take a publisher.
   * "taken": the lease of a process that died was taken over (its files are continued).
   */
  async function claim(ctx: StreamContext): Promise<"ok" | "taken" | "elsewhere" | "refused"> {
    let elsewhere = false;
    let taken = false;
    const result = await runtime.send(
      "livestream",
      ctx.id,
      { type: "PUBLISH_STARTED" },
      {
        before: async (tx) => {
          const got = await leases.acquire(tx, ctx.id, ctx.orgId);
          if (!got.ok) {
            elsewhere = true;
            return "skip";
          }
          taken = got.takenFrom !== undefined;
          if (got.takenFrom) logger.warn("Broadcast taken over from a process whose lease lapsed", { stream_id: ctx.id, from: got.takenFrom.claimedBy });
          await deps.ledger.enqueue(tx, {
            type: "live-watch",
            payload: { streamId: ctx.id },
            orgId: ctx.orgId,
            entityId: ctx.id,
            runAfter: got.lease.leaseUntil + 1,
            dedupeKey: `live-watch:${ctx.id}`,
          });
          return undefined;
        },
      },
    );
    if (elsewhere) return "elsewhere";
    if (!result?.record.tags.has("hasPublisher")) return "refused";
    return taken ? "taken" : "ok";
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
      if (record.tags.has("booked")) return refuse("The stream is booked for later and not ready yet.");
      if (!record.tags.has("acceptsPublish")) return refuse("The stream has ended.");
      let entry = live.get(ctx.id);
      if (entry?.closing) return refuse("The stream has ended.");
      if (entry?.broadcast.publishing) return refuse("Another encoder is already publishing to this stream.");
      // Claimed before the first await below, so a second encoder racing this one is refused.
      if (entry) entry.broadcast.publishing = true;
      const claimed = await claim(ctx).catch((err) => {
        logger.error("Cannot claim the broadcast", { err, stream_id: ctx.id });
        return "refused" as const;
      });
      if (claimed !== "ok" && claimed !== "taken") {
        if (entry) entry.broadcast.publishing = false;
        return refuse(claimed === "elsewhere" ? "Another encoder is already publishing to this stream." : "The stream has ended.");
      }
      if (!entry) {
        const created: LocalBroadcast = {
          ctx,
          observed: record.tags.has("onAir"),
          closing: false,
          broadcast: createBroadcast({
            streamId: ctx.id,
            latency: ctx.latency,
            flvPath: deps.files.flvPath(ctx.id),
            hlsDir: deps.files.hlsDir(ctx.id),
            hlsFiles: deps.files.hlsSink(ctx.id),
            recordingParts: deps.files.recordingParts(ctx.id, logger),
            logger,
            onSegment: (info) => {
              startPlayer(created);
              deps.onSegment?.(ctx.id, info, created.broadcast.segmentSeconds);
            },
            onPart: (info) => deps.onPart?.(ctx.id, info),
            // Taken over after its owner died: the recording and the live playlist go on where it left them.
            ...(claimed === "taken" ? { continuation: () => deps.files.continuation(ctx.id) } : {}),
          }),
        };
        entry = created;
        live.set(ctx.id, entry);
      }
      try {
        await entry.broadcast.startSession();
      } catch (err) {
        entry.broadcast.markLeft();
        logger.error("Cannot open the broadcast's recording or playlist", { err, stream_id: ctx.id });
        // The stream waits for a publisher again; its reconnect window (then the end) runs as for any departure.
        await runtime.send("livestream", ctx.id, { type: "PUBLISHER_LEFT" }).catch(() => undefined);
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

    /** POST /end/: ENDED (full shape) now; the `live-finalize` work the machine queued disconnects the publisher and attaches the recording. */
    async endExplicitly(ctx: StreamContext): Promise<void> {
      const entry = live.get(ctx.id);
      let durationSeconds: number | null = null;
      if (entry) durationSeconds = entry.broadcast.durationSeconds();
      else {
        // Held by another process: its lease row says since when, and until when if the publisher left.
        const lease = await leases.get(ctx.id);
        if (lease) durationSeconds = Math.max(0, Math.round(((lease.leftAt ?? Date.now()) - lease.startedAt) / 1000));
      }
      await runtime.send("livestream", ctx.id, { type: "END_REQUESTED", at: new Date().toISOString(), durationSeconds });
    },

    /** The broadcast this process holds for a stream, if any. */
    local: (id: string): LocalBroadcast | undefined => live.get(id),

    /** Finalization takes the broadcast: the publisher is disconnected and the files closed. */
    async close(id: string): Promise<LocalBroadcast | undefined> {
      const entry = live.get(id);
      if (!entry) return undefined;
      entry.closing = true;
      entry.player?.abort();
      deps.kick(entry.ctx.streamKey);
      await entry.broadcast.end();
      return entry;
    },

    forget: (id: string) => live.delete(id),

    /** Streams whose broadcast this process holds (their leases are renewed). */
    held: () => [...live.keys()],

    /** Another process took a broadcast over (our lease lapsed while we stalled): drop it here without finalizing. */
    lost(ids: string[]): number {
      for (const id of ids) {
        const entry = live.get(id);
        if (!entry) continue;
        entry.closing = true;
        entry.player?.abort();
        deps.kick(entry.ctx.streamKey);
        // Its files are the new owner's (issue 26 take-over): nothing more is written to them from here.
        void entry.broadcast.abandon().catch(() => undefined);
        live.delete(id);
        logger.warn("Broadcast lease lost; dropped here", { stream_id: id });
      }
      return ids.length;
    },

    isBroadcasting: (id: string) => live.has(id),

    /**
     * At shutdown: files closed, and (remote store) each FLV's last bytes
     * uploaded as a final part, since the process that finalizes may not
     * have this disk; the leases are left to the next holder (see LiveModule.stop).
     */
    async stop() {
      await Promise.all(
        [...live.values()].map(async (entry) => {
          entry.player?.abort();
          await entry.broadcast.end({ uploadRest: true }).catch(() => undefined);
        }),
      );
      live.clear();
    },
  };
}

export type LiveIngest = ReturnType<typeof createLiveIngest>;
