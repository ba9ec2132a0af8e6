import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import type { Latency, StreamContext } from "../../machines/livestream-payload.ts";
import type { VideoContext } from "../../machines/video-payload.ts";
import type { ActorRecord, ActorRuntime } from "../actors/actor-runtime.ts";
import type { Tx } from "../db/create-database.ts";
import { actors, streamKeys } from "../db/schema/index.ts";
import { ApiError } from "../http/api-error.ts";
import { parseScheduledAt } from "../http/timestamp.ts";
import { newId, randomToken } from "../ids.ts";
import type { Logger } from "../log.ts";
import type { Organization } from "../orgs/org-store.ts";
import type { LiveUrls } from "./live-urls.ts";

export interface CreateStreamInput {
  title: string;
  latency?: Latency;
  drm_enabled?: boolean;
  tags?: Record<string, unknown>;
  scheduled_at?: string;
}

/** Statuses that hold a slot of the LIVE_SLOTS pool (and of the organization's LIVE_SLOTS_PER_ORG). */
export const SLOT_STATUSES = ["READY_TO_STREAM", "LIVE"];

/** Slots held in the whole pool, or by one organization; answered from the index actors_kind_status_org alone. */
export async function countSlotsInUse(tx: Tx, orgId?: string): Promise<number> {
  const rows = await tx
    .select({ n: sql<number>`count(*)` })
    .from(actors)
    .where(and(eq(actors.kind, "livestream"), inArray(actors.status, SLOT_STATUSES), isNull(actors.deletedAt), orgId === undefined ? undefined : eq(actors.orgId, orgId)));
  return Number(rows[0]?.n ?? 0);
}

export interface SlotLimits {
  /** LIVE_SLOTS: the whole pool. */
  pool: () => number;
  /** LIVE_SLOTS_PER_ORG: what one organization may hold at once. */
  perOrg: () => number;
}

export function createLivestreamService(deps: { runtime: ActorRuntime; urls: LiveUrls; slots: SlotLimits; logger: Logger }) {
  const { runtime, urls } = deps;

  /**
   * Called inside the write transaction that just put `orgId`'s stream into a
   * slot status (so the counts include it): refuses when the organization or
   * the pool is over its limit, rolling the transition back.
   */
  async function checkSlots(tx: Tx, orgId: string, streamId: string): Promise<void> {
    const org = await countSlotsInUse(tx, orgId);
    if (org > deps.slots.perOrg()) {
      deps.logger.warn("Live slot refused: organization at its limit", { org_id: orgId, stream_id: streamId, held: org - 1, limit: deps.slots.perOrg() });
      throw new ApiError("NO_SLOTS_AVAILABLE");
    }
    const pool = await countSlotsInUse(tx);
    if (pool > deps.slots.pool()) {
      deps.logger.warn("Live slot refused: pool exhausted", { org_id: orgId, stream_id: streamId, held: pool - 1, limit: deps.slots.pool() });
      throw new ApiError("NO_SLOTS_AVAILABLE");
    }
  }

  /**
   * The stream's recording as it really is: when its transcode finished but the
   * in-memory listener missed it (another process, a restart), the stream is
   * brought up to date here, durably, before it is answered.
   */
  async function withRecordingState(record: ActorRecord<StreamContext>): Promise<ActorRecord<StreamContext>> {
    const rec = record.context.recording;
    if (!rec?.transcoding) return record;
    const video = await runtime.get<VideoContext>("video", rec.asset_id, record.orgId);
    let playbackUrl: string | null;
    if (!video)
      playbackUrl = null; // the recording was deleted: nothing is transcoding
    else if (video.status === "COMPLETED") playbackUrl = video.context.outcome?.url ?? null;
    else if (video.status === "ERROR") playbackUrl = null;
    else return record;
    const result = await runtime.send<StreamContext>("livestream", record.id, { type: "RECORDING_TRANSCODED", playbackUrl });
    return result && result.record.status !== "DELETED" ? result.record : record;
  }

  return {
    /** Creates a stream (READY_TO_STREAM at once, or SCHEDULED with `scheduled_at`), atomically with its slot and key. */
    async create(org: Organization, input: CreateStreamInput): Promise<ActorRecord<StreamContext>> {
      if (input.drm_enabled && !org.settings.features.drm) throw new ApiError("DRM_NOT_AVAILABLE");
      let scheduledAt: string | null = null;
      if (input.scheduled_at !== undefined) {
        // Strict: offset required, a real calendar date (Date.parse would turn 2099-02-30 into March 2), within a year.
        const at = parseScheduledAt(input.scheduled_at);
        if (!at.ok) throw ApiError.validation({ scheduled_at: at.error });
        scheduledAt = new Date(at.ms).toISOString();
      }
      const id = newId("ls");
      const streamKey = randomToken(32);
      const ctx: StreamContext = {
        id,
        orgId: org.id,
        title: input.title,
        latency: input.latency ?? "NORMAL",
        drm: input.drm_enabled ?? false,
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
      };
      const result = await runtime.create<StreamContext>("livestream", ctx, {
        within: async (tx, record) => {
          // Counted inside the write transaction, so two creations can't both take the last slot.
          if (SLOT_STATUSES.includes(record.status)) await checkSlots(tx, org.id, id);
          await tx.insert(streamKeys).values({ digest: urls.keyDigest(streamKey), streamId: id, orgId: org.id, createdAt: Date.now() });
        },
      });
      deps.logger.info("Live stream created", { org_id: org.id, stream_id: id, status: result.record.status, scheduled_at: scheduledAt });
      return result.record;
    },

    /**
     * A booked stream's time is near: READY_TO_STREAM if its organization and
     * the pool each have a slot free, else ERROR NO_SLOTS_AVAILABLE. Booking
     * itself holds no slot.
     */
    async makeReady(id: string): Promise<void> {
      try {
        await runtime.send<StreamContext>(
          "livestream",
          id,
          { type: "READY" },
          {
            within: async (tx, result) => {
              if (result.record.status === "READY_TO_STREAM") await checkSlots(tx, result.record.orgId, id);
            },
          },
        );
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        await runtime.send("livestream", id, { type: "FAIL", at: new Date().toISOString(), error: { code: err.code, message: "No live stream slot was free at the booked time." } });
      }
    },

    async get(orgId: string, id: string): Promise<ActorRecord<StreamContext> | null> {
      const record = await runtime.get<StreamContext>("livestream", id, orgId);
      return record ? withRecordingState(record) : null;
    },
    async list(orgId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }): Promise<ActorRecord<StreamContext>[]> {
      const records = await runtime.list<StreamContext>("livestream", orgId, page);
      return Promise.all(records.map(withRecordingState));
    },

    async remove(id: string): Promise<void> {
      await runtime.send(
        "livestream",
        id,
        { type: "DELETE" },
        {
          within: (tx) =>
            tx
              .delete(streamKeys)
              .where(eq(streamKeys.streamId, id))
              .then(() => undefined),
        },
      );
    },

    async byStreamKey(streamKey: string): Promise<ActorRecord<StreamContext> | null> {
      const rows = await runtime.database.db
        .select()
        .from(streamKeys)
        .where(eq(streamKeys.digest, urls.keyDigest(streamKey)))
        .limit(1);
      if (!rows[0]) return null;
      return runtime.get<StreamContext>("livestream", rows[0].streamId);
    },
  };
}

export type LivestreamService = ReturnType<typeof createLivestreamService>;
