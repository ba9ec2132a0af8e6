import type { VideoContext } from "../../machines/video-payload.ts";
import type { ActorRecord, ActorRuntime } from "../actors/actor-runtime.ts";
import { DomainError } from "../errors.ts";
import { DrmNotAvailable, InvalidSourceUrl, NotFound, SubtitlesUnavailable, TranscodeNotConfigured, TranscodeQueueFailed, TranscodeQueueFull, VideoNotRetryable } from "./errors.ts";
import { newId } from "../ids.ts";
import type { Tx } from "../db/create-database.ts";
import type { WorkLedger } from "../work/work-ledger.ts";
import type { WorkPolicies } from "../work/work-runner.ts";
import type { WorkRequest } from "../work/work-types.ts";
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

/** The work types of a video's pipeline: a URL source is fetched first, then the same work row becomes a transcode. */
const PIPELINE = ["fetch-source", "transcode"] as const;

function titleFrom(url: URL): string {
  const last = decodeURIComponent(url.pathname.split("/").filter(Boolean).pop() ?? "");
  return (last || url.hostname).slice(0, 200);
}

export function createVideoService(deps: {
  runtime: ActorRuntime;
  ledger: WorkLedger;
  policies: WorkPolicies;
  uploads: UploadStore;
  store: MediaStore;
  logger: Logger;
  /** How many queued or running jobs the queue accepts before refusing (502 TRANSCODE_QUEUE_FAILED). */
  queueLimit: number;
  onQueued: () => void;
  /**
   * Issue 23: whether an organization has transcoding configured, read when a live recording would be
   * registered (no organization store given: always, as before).
   */
  orgs?: { getOrg(id: string): Promise<Organization | null> };
  /** Issue 12: the speech-to-text engine (null: none), and what to install when there is none (422 `details.subtitles`). */
  transcripts?: { transcriber: { name: string } | null; unavailableReason: string };
}) {
  const { runtime, ledger } = deps;
  const transcripts = deps.transcripts ?? { transcriber: null, unavailableReason: "no speech-to-text engine was given to this service" };

  /** `subtitles: true` with no engine installed: 422 naming what to install, before anything is created. */
  function assertSubtitles(requested: boolean | undefined): void {
    if (requested && !transcripts.transcriber) throw new SubtitlesUnavailable(transcripts.unavailableReason);
  }

  async function create(ctx: VideoContext, dedupeKey: string | undefined, work: WorkRequest) {
    let result: Awaited<ReturnType<typeof runtime.create<"video">>>;
    try {
      result = await runtime.create("video", ctx, {
        dedupeKey,
        // The first stage is queued in the creation's own transaction: a video never exists without its work, and
        // the queue's length is read where it cannot change before the enqueue (recordings are registered elsewhere).
        within: async (tx, record) => {
          if ((await ledger.countOpen([...PIPELINE], tx)) >= deps.queueLimit) throw new TranscodeQueueFull();
          await ledger.enqueue(tx, { ...work, orgId: record.orgId, entityId: record.id, maxAttempts: deps.policies[work.type].maxAttempts });
        },
      });
    } catch (err) {
      if (err instanceof DomainError) throw err;
      deps.logger.error("Cannot queue a transcode", { err, org_id: ctx.orgId, video_id: ctx.id });
      throw new TranscodeQueueFailed();
    }
    if (result.created) {
      deps.logger.info("Video registered", { org_id: ctx.orgId, video_id: ctx.id, kind: ctx.kind });
      deps.onQueued();
    }
    return result;
  }

  /** Where a retried video starts: as its registration did (an upload, a URL), or from its recording's file. */
  async function firstStageOf(ctx: VideoContext): Promise<WorkRequest> {
    if (ctx.sourceUrl) {
      const uploadId = deps.uploads.idFromSourceUrl(new URL(ctx.sourceUrl));
      return uploadId ? { type: "transcode", payload: { uploadId } } : { type: "fetch-source", payload: {} };
    }
    // A recording has no URL: the file its transcode was queued with (the stored original is also looked for there).
    const last = await ledger.latest(ctx.id, "transcode");
    return { type: "transcode", payload: last?.payload ?? {} };
  }

  /** Issue 23: TRANSCODE_NOT_CONFIGURED (409, nothing created) on every path that would queue a transcode: registration and upload slots. */
  function assertTranscoding(org: Organization): void {
    if (!org.settings.transcoding) throw new TranscodeNotConfigured();
  }

  return {
    assertTranscoding,
    /** Whether the organization's recordings can be transcoded: a recording of one without transcoding is not registered. */
    async transcodingConfigured(orgId: string): Promise<boolean> {
      if (!deps.orgs) return true;
      return !!(await deps.orgs.getOrg(orgId))?.settings.transcoding;
    },
    /** The engine's name (GET /organization/ `features.transcripts`), null without one. */
    transcriptEngine: (): string | null => transcripts.transcriber?.name ?? null,
    assertSubtitles,

    async register(org: Organization, body: RegisterVideoInput): Promise<{ created: boolean; record: ActorRecord<VideoContext> }> {
      let url: URL;
      try {
        url = new URL(body.source_url);
      } catch {
        throw new InvalidSourceUrl();
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new InvalidSourceUrl();
      assertTranscoding(org);
      if (body.drm_enabled && !org.settings.features.drm) throw new DrmNotAvailable();
      assertSubtitles(body.subtitles);
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
      const result = uploadId ? await create(ctx, sourceUrl, { type: "transcode", payload: { uploadId } }) : await create(ctx, sourceUrl, { type: "fetch-source", payload: {} });
      return { created: result.created, record: result.record };
    },

    /**
     * A live recording enters the library as a video of kind
     * LIVESTREAM_RECORDING (no VIDEO_UPLOADED), inside the caller's
     * transaction: the one that ends the stream, so the stream's ENDED and
     * the recording's existence commit together. Whatever the queue's length:
     * the broadcast already happened. The dedupe key makes a repeated end
     * reuse the same recording.
     */
    async registerRecordingIn(
      tx: Tx,
      input: {
        id: string;
        orgId: string;
        title: string;
        stream: { id: string; stream_key: string };
        sourcePath: string;
        tags: Record<string, unknown> | null;
        dedupeKey: string;
        /** The stream was created with `drm_enabled` (its `drm`): the recording is packaged with DRM like an upload. */
        drm?: boolean;
        /** The stream was created with `subtitles: true`: the recording is transcribed like an upload. */
        subtitles?: boolean;
      },
    ) {
      const ctx: VideoContext = {
        id: input.id,
        orgId: input.orgId,
        title: input.title,
        kind: "LIVESTREAM_RECORDING",
        sourceUrl: null,
        drm: input.drm ?? false,
        subtitles: input.subtitles ?? false,
        tags: input.tags,
        createdAt: new Date().toISOString(),
        progress: 0,
        transcoderId: null,
        outcome: null,
        error: null,
        stream: input.stream,
      };
      const work: WorkRequest = { type: "transcode", payload: { sourcePath: input.sourcePath } };
      const { result } = await runtime.createIn(tx, "video", ctx, {
        dedupeKey: input.dedupeKey,
        within: (t, record) => ledger.enqueue(t, { ...work, orgId: record.orgId, entityId: record.id, maxAttempts: deps.policies[work.type].maxAttempts }).then(() => undefined),
      });
      if (result.created) deps.logger.info("Recording registered", { org_id: input.orgId, video_id: input.id, stream_id: input.stream.id, drm: ctx.drm, subtitles: ctx.subtitles });
      return result.record;
    },

    /**
     * A video in ERROR tried again (`POST /videos/{id}/retry/`): same id, same source, fresh attempts. The machine's
     * RETRY (failed → queued) and the first stage's work row commit together: a URL source is fetched again (it may
     * have been fixed), an upload or a recording transcoded again from the file it was registered with. 404 for
     * another organization's id, 409 VIDEO_NOT_RETRYABLE unless ERROR (a second retry racing the first included).
     */
    async retry(orgId: string, id: string): Promise<ActorRecord<VideoContext>> {
      const existing = await runtime.get("video", id, orgId);
      if (!existing) throw new NotFound();
      if (!existing.tags.has("settled") || existing.status !== "ERROR") throw new VideoNotRetryable(existing.status);
      const work = await firstStageOf(existing.context);
      let result: Awaited<ReturnType<typeof runtime.send<"video">>>;
      try {
        result = await runtime.send(
          "video",
          id,
          { type: "RETRY" },
          {
            within: async (tx) => {
              if ((await ledger.countOpen([...PIPELINE], tx)) >= deps.queueLimit) throw new TranscodeQueueFull();
              await ledger.enqueue(tx, { ...work, orgId, entityId: id, maxAttempts: deps.policies[work.type].maxAttempts });
            },
          },
        );
      } catch (err) {
        if (err instanceof DomainError) throw err;
        deps.logger.error("Cannot queue a retry", { err, org_id: orgId, video_id: id });
        throw new TranscodeQueueFailed();
      }
      if (!result?.changed) throw new VideoNotRetryable(result?.record.status ?? existing.status);
      deps.logger.info("Video retried", { org_id: orgId, video_id: id, first_stage: work.type });
      deps.onQueued();
      return result.record;
    },

    get: (orgId: string, id: string) => runtime.get("video", id, orgId),
    list: (orgId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }) => runtime.list("video", orgId, page),

    /** Deletes the video (404 when absent), cancels its job and removes its files. */
    async remove(orgId: string, id: string, cancelRunning: (entityId: string) => void): Promise<void> {
      const existing = await runtime.get("video", id, orgId);
      if (!existing) throw new NotFound();
      await runtime.send("video", id, { type: "DELETE" }, { within: (tx) => ledger.cancelForEntity(tx, id, [...PIPELINE]).then(() => undefined) });
      cancelRunning(id);
      await deps.store.remove(id);
      deps.logger.info("Video deleted", { org_id: orgId, video_id: id });
    },
  };
}

export type VideoService = ReturnType<typeof createVideoService>;
