import { rm } from "node:fs/promises";
import type { RecordingInfo } from "../../machines/livestream-payload.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import { crashPoint } from "../faults.ts";
import { newId } from "../ids.ts";
import type { Logger } from "../log.ts";
import type { VideoService } from "../videos/video-service.ts";
import type { WorkQueue } from "../work/work-ledger.ts";
import type { WorkHandlers } from "../work/work-runner.ts";
import type { LiveWork } from "./live-work.ts";
import type { BroadcastLeases } from "./broadcast-leases.ts";
import type { LiveFiles } from "./live-files.ts";
import type { LiveIngest } from "./live-ingest.ts";

/**
 * The work of a broadcast's end, as PeerTube's live-ending job: durable rows
 * any process may run, resumable after a crash at any point.
 *
 * - `live-finalize` (queued by the stream's machine on entering `finalizing`,
 *   or on an explicit end): the owner closes the publisher and the files (or,
 *   the owner being dead, the playlist on disk gets its ENDLIST), the
 *   recording is probed, and one transaction registers the recording video,
 *   tells the stream PIPELINE_ENDED, releases the broadcast's lease and
 *   schedules the live files' removal. Nothing before that transaction is
 *   visible, so a crash anywhere repeats it; after it, there is nothing left
 *   to do. ENDED and RECORDING_READY fire once.
 * - `live-watch`: sleeps until the broadcast's lease would lapse; a lapsed
 *   lease (the owner died) tells the stream BROADCAST_LOST (its reconnect
 *   window: an encoder coming back to any process takes the broadcast over,
 *   live-ingest.ts), and it keeps watching the new owner, if any.
 * - `live-files-remove`: the live HLS folder after LIVE_FILES_RETENTION_MS.
 */
export function createLiveWork(deps: {
  runtime: ActorRuntime;
  ledger: WorkQueue<LiveWork>;
  leases: BroadcastLeases;
  ingest: LiveIngest;
  files: LiveFiles;
  videos: VideoService;
  filesRetentionMs: number;
  logger: Logger;
}): WorkHandlers<LiveWork> {
  const { runtime, leases, files } = deps;

  /** A broadcast cut off by a crash, without a lease row: on air from its first media until the recording was last written. */
  async function recoveredDuration(id: string, startedAt: string | null, mediaSeconds: number): Promise<number | null> {
    const written = await files.recordingWrittenAt(id);
    if (written === null) return null;
    const observed = startedAt ? Date.parse(startedAt) : Number.POSITIVE_INFINITY;
    return Math.max(0, Math.round((written - Math.min(observed, written - mediaSeconds * 1000)) / 1000));
  }

  return {
    "live-finalize": {
      async run(row, { logger }) {
        const { streamId } = row.payload;
        const stream = await runtime.get("livestream", streamId);
        const lease = await leases.get(streamId);
        // Another live process holds the broadcast: only it can close the files. The ledger leaves such a row to the lease
        // holder (live-work.ts `affinity`); claimed here anyway (the lease was taken between the claim and this read), it
        // is handed back until that lease's end, when it is ours to run should that process die.
        if (lease && lease.claimedBy !== leases.holder && lease.leaseUntil > Date.now()) return { defer: lease.leaseUntil - Date.now() + 50 };
        if (!stream) {
          deps.ingest.forget(streamId);
          return;
        }
        const ctx = stream.context;
        const local = await deps.ingest.close(streamId);
        if (!local) await files.closePlaylist(streamId);
        // Local as a rule; from the bucket when an earlier attempt uploaded it and died before its commit; rebuilt from
        // the parts uploaded while on air when the owner died on another machine (STORAGE=s3).
        const probe = await files.probe(streamId);
        if (probe.rebuiltFrom)
          logger.info("Recording rebuilt from its parts", { stream_id: streamId, parts: probe.rebuiltFrom.parts, bytes: probe.rebuiltFrom.bytes, media_s: Math.round(probe.durationSeconds) });
        const durationSeconds = local
          ? local.broadcast.durationSeconds()
          : lease && probe.hasMedia
            ? Math.max(0, Math.round(((lease.leftAt ?? Math.min(Date.now(), lease.leaseUntil)) - lease.startedAt) / 1000))
            : probe.hasMedia
              ? await recoveredDuration(streamId, ctx.startedAt, probe.durationSeconds)
              : null;
        const info = local?.broadcast.info();
        let recording: RecordingInfo | null = null;
        const assetId = newId("vid");
        // Issue 23: an organization without transcoding gets no recording (it would queue a transcode): the stream ends
        // with `recording: null` and no RECORDING_READY, and the FLV is dropped (docs/decisions.md).
        const recordable = probe.hasMedia && (await deps.videos.transcodingConfigured(ctx.orgId));
        if (probe.hasMedia && !recordable) logger.info("Recording not kept: the organization has no transcoding", { stream_id: streamId, org_id: ctx.orgId });
        if (recordable) {
          const width = info?.width ?? probe.width;
          const height = info?.height ?? probe.height;
          recording = {
            asset_id: assetId,
            transcoding: true,
            duration_seconds: Math.round(probe.durationSeconds) || (durationSeconds ?? 0),
            resolution: width && height ? `${width}x${height}` : null,
            width: width ?? null,
            height: height ?? null,
          };
        }
        // A remote store gets the FLV before the commit that queues its transcode (which may run on another process); its parts go then.
        await files.storeRecording(streamId, recordable);
        crashPoint("live-finalize:before-commit");
        // Resumed after its owner died: the broadcast ended when its publisher left (or its owner stopped renewing), not now.
        const at = new Date(!local && lease ? Math.min(Date.now(), lease.leftAt ?? lease.leaseUntil) : Date.now()).toISOString();
        let recordingId: string | null = null;
        await runtime.send(
          "livestream",
          streamId,
          { type: "PIPELINE_ENDED", at, durationSeconds, transcodingInSecs: null, recording },
          {
            // Whatever the stream's state (already ended explicitly, even deleted): the broadcast is over.
            before: async (tx) => {
              await leases.release(tx, streamId);
              await deps.ledger.enqueue(tx, {
                type: "live-files-remove",
                payload: { streamId },
                orgId: ctx.orgId,
                entityId: streamId,
                // A DRM stream's live HLS is clear (issue 23): gone at the end, so its recording's encrypted DASH is the only copy left.
                runAfter: Date.now() + (ctx.drm ? 0 : deps.filesRetentionMs),
                dedupeKey: `live-files-remove:${streamId}`,
              });
              return undefined;
            },
            within: async (tx, result) => {
              if (!recording || result.record.context.recording?.asset_id !== assetId) return;
              const video = await deps.videos.registerRecordingIn(tx, {
                id: assetId,
                orgId: ctx.orgId,
                title: ctx.title,
                stream: { id: ctx.id, stream_key: ctx.streamKey },
                sourcePath: files.flvPath(streamId),
                tags: ctx.tags,
                dedupeKey: `recording:${ctx.id}`,
                drm: ctx.drm,
                subtitles: ctx.subtitles ?? false,
                playback: { policy: ctx.playbackPolicy ?? "public", restrictionId: ctx.playbackRestrictionId ?? null },
              });
              recordingId = video.id;
            },
          },
        );
        crashPoint("live-finalize:after-commit");
        deps.ingest.forget(streamId);
        // Not kept (no transcoding): the local FLV goes now that the end is committed (s3: storeRecording dropped it).
        if (probe.hasMedia && !recordable) await rm(files.flvPath(streamId), { force: true });
        const uploads = files.takeUploadStats(streamId);
        const parts = files.takePartStats(streamId);
        logger.info("Live broadcast finalized", {
          stream_id: streamId,
          org_id: ctx.orgId,
          trigger: row.payload.trigger,
          recording_id: recordingId,
          duration_s: durationSeconds,
          ...(uploads && uploads.files > 0 ? { hls_uploads: uploads.files, hls_upload_avg_ms: Math.round(uploads.totalMs / uploads.files), hls_upload_max_ms: Math.round(uploads.maxMs) } : {}),
          ...(parts && parts.parts > 0
            ? {
                recording_parts: parts.parts,
                recording_part_avg_bytes: Math.round(parts.bytes / parts.parts),
                recording_part_avg_ms: Math.round(parts.totalMs / parts.parts),
                recording_part_max_ms: Math.round(parts.maxMs),
              }
            : {}),
        });
      },
    },

    "live-watch": {
      async run(row, { logger }) {
        const { streamId } = row.payload;
        const lease = await leases.get(streamId);
        if (!lease) return; // finalized
        const now = Date.now();
        if (lease.leaseUntil > now) return { defer: lease.leaseUntil - now + 50 };
        const result = await runtime.send("livestream", streamId, { type: "BROADCAST_LOST" }, { before: async (tx) => ((await leases.lapsed(tx, streamId)) ? undefined : "skip") });
        if (result?.changed) logger.warn("Broadcast owner gone (lease lapsed); waiting for the encoder to come back to any process", { stream_id: streamId, owner: lease.claimedBy });
        // Keep watching until the lease is released (the finalization's commit) or the stream settled: the broadcast may
        // be taken over (then this waits for the new owner's lease), or its reconnect window runs out (live-finalize).
        if (result && !result.record.tags.has("settled")) return { defer: 1000 };
      },
    },

    "live-files-remove": {
      async run(row) {
        await files.removeHls(row.payload.streamId);
      },
    },
  };
}
