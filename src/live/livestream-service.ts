import type { Latency, StreamContext } from "../../machines/livestream-payload.ts";
import type { StreamEvent } from "../../machines/livestream-machine.ts";
import type { ActorRecord, ActorRuntime } from "../actors/actor-runtime.ts";
import type { Tx } from "../db/create-database.ts";
import { parseScheduledAt } from "../http/timestamp.ts";
import { newId, randomToken } from "../ids.ts";
import type { Logger } from "../log.ts";
import type { Organization } from "../orgs/org-store.ts";
import { DrmNotAvailable, InvalidScheduledAt } from "./errors.ts";
import type { LiveUrls } from "./live-urls.ts";
import type { StreamKeys } from "./stream-keys.ts";
import type { AssetPlayback } from "../playback/asset-playback.ts";
import type { PlaybackPolicy } from "../orgs/org-settings.ts";

export interface CreateStreamInput {
  title: string;
  latency?: Latency;
  drm_enabled?: boolean;
  subtitles?: boolean;
  tags?: Record<string, unknown>;
  scheduled_at?: string;
  playback_policy?: PlaybackPolicy;
  playback_restriction_id?: string;
}

export function createLivestreamService(deps: {
  runtime: ActorRuntime;
  urls: LiveUrls;
  /** Stream key digests (stream-keys.ts). */
  keys: StreamKeys;
  logger: Logger;
  /** Issue 27: the playback rules of a new stream, recorded under its live token in its creation transaction. */
  playback: AssetPlayback;
  /** Issue 12: refuses `subtitles: true` (422 `details.subtitles`) when no speech-to-text engine is installed. */
  assertSubtitles?: (requested: boolean | undefined) => void;
}) {
  const { runtime, urls } = deps;

  /**
   * The stream's recording as it really is. The recording video tells its
   * stream durably when its transcode settles (an `actor-message`), and the
   * stream asks a recording it learns of late; a video attached without a
   * stream link (RECORDING_ATTACHED of any video) is only caught up here,
   * durably, before it is answered.
   */
  async function withRecordingState(record: ActorRecord<StreamContext>): Promise<ActorRecord<StreamContext>> {
    const rec = record.context.recording;
    if (!rec?.transcoding) return record;
    const video = await runtime.get("video", rec.asset_id, record.orgId);
    let event: StreamEvent;
    // The recording was deleted (its message to the stream not delivered yet): no recording any more.
    if (!video) event = { type: "RECORDING_DELETED", assetId: rec.asset_id };
    // Settled: its manifest, or null when the transcode failed.
    else if (video.tags.has("settled")) event = { type: "RECORDING_TRANSCODED", playbackUrl: video.context.outcome?.url ?? null };
    else return record;
    const result = await runtime.send("livestream", record.id, event);
    return result && result.record.status !== "DELETED" ? result.record : record;
  }

  return {
    /** Creates a stream (READY_TO_STREAM at once, or SCHEDULED with `scheduled_at`), atomically with its slot and key. */
    async create(org: Organization, input: CreateStreamInput, more: { within?: (tx: Tx, streamId: string) => Promise<unknown> } = {}): Promise<ActorRecord<StreamContext>> {
      if (input.drm_enabled && !org.settings.features.drm) throw new DrmNotAvailable();
      if (input.subtitles) {
        if (!deps.assertSubtitles) throw new Error("subtitles asked for, but no transcript check was wired");
        deps.assertSubtitles(true);
      }
      let scheduledAt: string | null = null;
      if (input.scheduled_at !== undefined) {
        // Strict: offset required, a real calendar date (Date.parse would turn 2099-02-30 into March 2), within a year.
        const at = parseScheduledAt(input.scheduled_at);
        if (!at.ok) throw new InvalidScheduledAt(at.error);
        scheduledAt = new Date(at.ms).toISOString();
      }
      const playback = await deps.playback.resolve(org, input);
      const id = newId("ls");
      const streamKey = randomToken(32);
      const ctx: StreamContext = {
        id,
        orgId: org.id,
        title: input.title,
        latency: input.latency ?? "NORMAL",
        drm: input.drm_enabled ?? false,
        // Not part of the stream's public shapes (spec 2.7/2.8 list no such field): it reaches the recording only.
        ...(input.subtitles ? { subtitles: true } : {}),
        tags: input.tags ?? null,
        streamKey,
        rtmpUrl: urls.rtmpUrl(streamKey),
        hlsUrl: urls.hlsUrl(id),
        createdAt: new Date().toISOString(),
        scheduledAt,
        startedAt: null,
        endedAt: null,
        durationSeconds: null,
        transcodingInSecs: null,
        playbackUrl: null,
        recording: null,
        error: null,
        playbackPolicy: playback.policy,
        playbackRestrictionId: playback.restrictionId,
      };
      const result = await runtime.create("livestream", ctx, {
        // Slots are counted by the kind's `check` inside this transaction (src/live/livestream-kind.ts), so two creations can't both take the last slot.
        within: async (tx) => {
          await deps.keys.addIn(tx, { streamKey, streamId: id, orgId: org.id });
          await deps.playback.recordIn(tx, urls.token(id), { assetId: id, orgId: org.id, policy: playback.policy, restrictionId: playback.restrictionId });
          // Issue 26: the stream's simulcast targets, with it or not at all.
          await more.within?.(tx, id);
        },
      });
      deps.logger.info("Live stream created", { org_id: org.id, stream_id: id, status: result.record.status, scheduled_at: scheduledAt });
      return result.record;
    },

    get(orgId: string, id: string): Promise<ActorRecord<StreamContext> | null> {
      // Only a stream whose recording is still transcoding needs a look at its video (one promise fewer on every other read).
      return runtime.get("livestream", id, orgId).then((record) => (record?.context.recording?.transcoding ? withRecordingState(record) : record));
    },
    async list(orgId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }): Promise<ActorRecord<StreamContext>[]> {
      const records = await runtime.list("livestream", orgId, page);
      // Only a stream whose recording is still transcoding needs a look at its video: a page without one is answered as read.
      if (!records.some((r) => r.context.recording?.transcoding)) return records;
      return Promise.all(records.map(withRecordingState));
    },

    async remove(id: string, more: { within?: (tx: Tx) => Promise<unknown> } = {}): Promise<void> {
      await runtime.send(
        "livestream",
        id,
        { type: "DELETE" },
        {
          within: async (tx) => {
            await deps.keys.removeIn(tx, id);
            await more.within?.(tx);
          },
        },
      );
    },

    async byStreamKey(streamKey: string): Promise<ActorRecord<StreamContext> | null> {
      const streamId = await deps.keys.streamOf(streamKey);
      return streamId ? runtime.get("livestream", streamId) : null;
    },
  };
}

export type LivestreamService = ReturnType<typeof createLivestreamService>;
