import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import type { Latency, StreamContext } from "../../machines/livestream-payload.ts";
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

/** Statuses that hold a slot of the LIVE_SLOTS pool. */
export const SLOT_STATUSES = ["READY_TO_STREAM", "LIVE"];

export async function countSlotsInUse(tx: Tx): Promise<number> {
  const rows = await tx
    .select({ n: sql<number>`count(*)` })
    .from(actors)
    .where(and(eq(actors.kind, "livestream"), inArray(actors.status, SLOT_STATUSES), isNull(actors.deletedAt)));
  return Number(rows[0]?.n ?? 0);
}

export function createLivestreamService(deps: { runtime: ActorRuntime; urls: LiveUrls; slots: () => number; logger: Logger }) {
  const { runtime, urls } = deps;

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
          if (SLOT_STATUSES.includes(record.status) && (await countSlotsInUse(tx)) > deps.slots()) throw new ApiError("NO_SLOTS_AVAILABLE");
          await tx.insert(streamKeys).values({ digest: urls.keyDigest(streamKey), streamId: id, orgId: org.id, createdAt: Date.now() });
        },
      });
      deps.logger.info("Live stream created", { org_id: org.id, stream_id: id, status: result.record.status, scheduled_at: scheduledAt });
      return result.record;
    },

    /** A booked stream's time is near: READY_TO_STREAM if a slot is free, else ERROR NO_SLOTS_AVAILABLE. */
    async makeReady(id: string): Promise<void> {
      try {
        await runtime.send("livestream", id, { type: "READY" }, {
          within: async (tx, result) => {
            if (result.record.status === "READY_TO_STREAM" && (await countSlotsInUse(tx)) > deps.slots()) throw new ApiError("NO_SLOTS_AVAILABLE");
          },
        });
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        await runtime.send("livestream", id, { type: "FAIL", at: new Date().toISOString(), error: { code: err.code, message: "No live stream slot was free at the booked time." } });
      }
    },

    get: (orgId: string, id: string) => runtime.get<StreamContext>("livestream", id, orgId),
    list: (orgId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }) => runtime.list<StreamContext>("livestream", orgId, page),

    async remove(id: string): Promise<void> {
      await runtime.send("livestream", id, { type: "DELETE" }, { within: (tx) => tx.delete(streamKeys).where(eq(streamKeys.streamId, id)).then(() => undefined) });
    },

    async byStreamKey(streamKey: string): Promise<ActorRecord<StreamContext> | null> {
      const rows = await runtime.database.db.select().from(streamKeys).where(eq(streamKeys.digest, urls.keyDigest(streamKey))).limit(1);
      if (!rows[0]) return null;
      return runtime.get<StreamContext>("livestream", rows[0].streamId);
    },
  };
}

export type LivestreamService = ReturnType<typeof createLivestreamService>;
