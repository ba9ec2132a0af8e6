import type { VideoContext } from "../../machines/video-payload.ts";
import type { ActorRecord, ActorRuntime } from "../actors/actor-runtime.ts";
import { ApiError } from "../http/api-error.ts";
import { newId } from "../ids.ts";
import type { JobQueue } from "../jobs/job-queue.ts";
import type { Logger } from "../log.ts";
import type { Organization } from "../orgs/org-store.ts";
import type { MediaStore } from "../storage/media-store.ts";
import type { UploadStore } from "./upload-store.ts";

export interface RegisterVideoInput {
  source_url: string;
  title?: string;
  drm_enabled?: boolean;
  subtitles?: boolean;
  tags?: Record<string, unknown>;
}

/** Job types of a video's pipeline: a URL source is fetched first, then the same job row becomes a transcode. */
export const FETCH_JOB = "fetch-source";
export const TRANSCODE_JOB = "transcode";

function titleFrom(url: URL): string {
  const last = decodeURIComponent(url.pathname.split("/").filter(Boolean).pop() ?? "");
  return (last || url.hostname).slice(0, 200);
}

export function createVideoService(deps: {
  runtime: ActorRuntime;
  jobs: JobQueue;
  uploads: UploadStore;
  store: MediaStore;
  logger: Logger;
  /** How many queued or running jobs the queue accepts before refusing (502 TRANSCODE_QUEUE_FAILED). */
  queueLimit: number;
  onQueued: () => void;
}) {
  const { runtime, jobs } = deps;

  async function enqueueGuard() {
    let active: number;
    try {
      active = await jobs.countActive();
    } catch (err) {
      deps.logger.error("Cannot read the job queue", { err });
      throw new ApiError("TRANSCODE_QUEUE_FAILED");
    }
    if (active >= deps.queueLimit) throw new ApiError("TRANSCODE_QUEUE_FAILED", "The transcoding queue is full. Safe to retry.");
  }

  async function create(ctx: VideoContext, dedupeKey: string | undefined, type: string, payload: Record<string, unknown>) {
    // A recording must enter the library whatever the queue's length: the broadcast already happened.
    if (ctx.kind === "UPLOAD") await enqueueGuard();
    let result: Awaited<ReturnType<typeof runtime.create<VideoContext>>>;
    try {
      result = await runtime.create<VideoContext>("video", ctx, {
        dedupeKey,
        within: (tx, record) => jobs.enqueue(tx, { type, orgId: record.orgId, entityId: record.id, payload }).then(() => undefined),
      });
    } catch (err) {
      if (err instanceof ApiError) throw err;
      deps.logger.error("Cannot queue a transcode", { err, org_id: ctx.orgId, video_id: ctx.id });
      throw new ApiError("TRANSCODE_QUEUE_FAILED");
    }
    if (result.created) {
      deps.logger.info("Video registered", { org_id: ctx.orgId, video_id: ctx.id, kind: ctx.kind });
      deps.onQueued();
    }
    return result;
  }

  return {
    async register(org: Organization, body: RegisterVideoInput): Promise<{ created: boolean; record: ActorRecord<VideoContext> }> {
      let url: URL;
      try {
        url = new URL(body.source_url);
      } catch {
        throw ApiError.validation({ source_url: "must be an http or https URL" });
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") throw ApiError.validation({ source_url: "must be an http or https URL" });
      if (!org.settings.transcoding) throw new ApiError("TRANSCODE_NOT_CONFIGURED");
      if (body.drm_enabled && !org.settings.features.drm) throw new ApiError("DRM_NOT_AVAILABLE");
      const uploadId = deps.uploads.idFromSourceUrl(url);
      if (uploadId) await deps.uploads.assertRegistrable(org.id, uploadId);
      // An upload is one file whatever query or fragment is added to its URL:
      // its canonical `{BASE_URL}/uploads/{id}` is the idempotency key.
      const sourceUrl = uploadId ? deps.uploads.sourceUrlOf(uploadId) : url.href;

      const ctx: VideoContext = {
        id: newId("vid"),
        orgId: org.id,
        title: body.title ?? titleFrom(url),
        kind: "UPLOAD",
        sourceUrl,
        drm: body.drm_enabled ?? false,
        subtitles: body.subtitles ?? false,
        tags: body.tags ?? null,
        createdAt: new Date().toISOString(),
        progress: 0,
        transcoderId: null,
        outcome: null,
        error: null,
        stream: null,
      };
      // An upload is on disk already; a URL is fetched by its own stage first.
      const result = uploadId ? await create(ctx, sourceUrl, TRANSCODE_JOB, { uploadId }) : await create(ctx, sourceUrl, FETCH_JOB, {});
      return { created: result.created, record: result.record };
    },

    /** A live recording enters the library as a video of kind LIVESTREAM_RECORDING (no dedupe, no VIDEO_UPLOADED). */
    async registerRecording(input: { orgId: string; title: string; stream: { id: string; stream_key: string }; sourcePath: string; tags: Record<string, unknown> | null; dedupeKey: string }) {
      const ctx: VideoContext = {
        id: newId("vid"),
        orgId: input.orgId,
        title: input.title,
        kind: "LIVESTREAM_RECORDING",
        sourceUrl: null,
        drm: false,
        subtitles: false,
        tags: input.tags,
        createdAt: new Date().toISOString(),
        progress: 0,
        transcoderId: null,
        outcome: null,
        error: null,
        stream: input.stream,
      };
      // The dedupe key makes a repeated end (e.g. after a crash mid-way) reuse the same recording.
      const result = await create(ctx, input.dedupeKey, TRANSCODE_JOB, { sourcePath: input.sourcePath });
      return result.record;
    },

    get: (orgId: string, id: string) => runtime.get<VideoContext>("video", id, orgId),
    list: (orgId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }) => runtime.list<VideoContext>("video", orgId, page),

    /** Deletes the video (404 when absent), cancels its job and removes its files. */
    async remove(orgId: string, id: string, cancelRunning: (entityId: string) => void): Promise<void> {
      const existing = await runtime.get<VideoContext>("video", id, orgId);
      if (!existing) throw ApiError.notFound();
      await runtime.send("video", id, { type: "DELETE" }, { within: (tx) => jobs.cancelForEntity(tx, id).then(() => undefined) });
      cancelRunning(id);
      await deps.store.remove(id);
      deps.logger.info("Video deleted", { org_id: orgId, video_id: id });
    },
  };
}

export type VideoService = ReturnType<typeof createVideoService>;
