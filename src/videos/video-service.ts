import type { TranscodePayload, VideoContext } from "../../machines/video-payload.ts";
import type { ActorRecord, ActorRuntime } from "../actors/actor-runtime.ts";
import { DomainError } from "../errors.ts";
import { DrmNotAvailable, InvalidSourceUrl, NotFound, SubtitlesUnavailable, TranscodeNotConfigured, TranscodeQueueFailed, TranscodeQueueFull, VideoNotRetryable } from "./errors.ts";
import { newId } from "../ids.ts";
import type { Tx } from "../db/create-database.ts";
import type { WorkQueue } from "../work/work-ledger.ts";
import type { VideoWork } from "./video-work.ts";
import type { Logger } from "../log.ts";
import type { Organization } from "../orgs/org-store.ts";
import type { MediaStore } from "../storage/media-store.ts";
import type { UploadStore } from "./upload-store.ts";
import type { AssetPlayback } from "../playback/asset-playback.ts";
import type { PlaybackPolicy } from "../orgs/org-settings.ts";

export interface RegisterVideoInput {
  source_url: string;
  title?: string;
  drm_enabled?: boolean;
  subtitles?: boolean;
  tags?: Record<string, unknown>;
  playback_policy?: PlaybackPolicy;
  playback_restriction_id?: string;
}

/** The work types of a video's pipeline, queued by its machine: a URL source is fetched first, then transcoded. */
const PIPELINE = ["fetch-source", "transcode"] as const;

function titleFrom(url: URL): string {
  const last = decodeURIComponent(url.pathname.split("/").filter(Boolean).pop() ?? "");
  return (last || url.hostname).slice(0, 200);
}

export function createVideoService(deps: {
  runtime: ActorRuntime;
  ledger: WorkQueue<VideoWork>;
  uploads: UploadStore;
  store: MediaStore;
  logger: Logger;
  /** Issue 27: the playback rules of a new video, recorded under its media token in its creation transaction. */
  playback: AssetPlayback;
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

  /**
   * The queue's length, read in the transaction that just queued one more stage (the machine's own work row,
   * written with its transition): beyond the limit, the whole transition rolls back.
   */
  async function assertQueueRoom(tx: Tx): Promise<void> {
    if ((await ledger.countOpen([...PIPELINE], tx)) > deps.queueLimit) throw new TranscodeQueueFull();
  }

  async function create(ctx: VideoContext, dedupeKey: string | undefined) {
    let result: Awaited<ReturnType<typeof runtime.create<"video">>>;
    try {
      result = await runtime.create("video", ctx, {
        dedupeKey,
        // The machine queues its first stage in the creation's own transaction (a video never exists without its
        // work); recordings are registered elsewhere, whatever the queue's length.
        within: async (tx, record) => {
          await assertQueueRoom(tx);
          await recordPlayback(tx, record.context);
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

  /**
   * Where a retried video's transcode reads, or null when its URL is fetched again (it may have been fixed): as
   * its registration did (an upload, a URL), or its recording's file.
   */
  async function retrySourceOf(ctx: VideoContext): Promise<TranscodePayload | null> {
    if (ctx.sourceUrl) {
      const uploadId = deps.uploads.idFromSourceUrl(new URL(ctx.sourceUrl));
      return uploadId ? { uploadId } : null;
    }
    // A recording has no URL: the file its transcode was queued with (the stored original is also looked for there);
    // a recording registered before its machine kept it: its last transcode row's.
    if (ctx.pipeline?.source) return ctx.pipeline.source;
    return (await ledger.latest(ctx.id, "transcode"))?.payload ?? {};
  }

  /** Issue 23: TRANSCODE_NOT_CONFIGURED (409, nothing created) on every path that would queue a transcode: registration and upload slots. */
  function assertTranscoding(org: Organization): void {
    if (!org.settings.transcoding) throw new TranscodeNotConfigured();
  }

  /** The video's playback rules under its media token, in its creation's transaction (nothing for a public, unrestricted one). */
  function recordPlayback(tx: Tx, ctx: VideoContext): Promise<void> {
    return deps.playback.recordIn(tx, deps.store.tokenFor(ctx.id), {
      assetId: ctx.id,
      orgId: ctx.orgId,
      policy: ctx.playbackPolicy ?? "public",
      restrictionId: ctx.playbackRestrictionId ?? null,
    });
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
      const playback = await deps.playback.resolve(org, body);
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
        playbackPolicy: playback.policy,
        playbackRestrictionId: playback.restrictionId,
        // An upload is on disk already; a URL is fetched by its own stage first.
        pipeline: { source: uploadId ? { uploadId } : null },
      };
      const result = await create(ctx, sourceUrl);
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
        /** Issue 27: the stream's playback rules, inherited by its recording. */
        playback?: { policy: PlaybackPolicy; restrictionId: string | null };
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
        playbackPolicy: input.playback?.policy ?? "public",
        playbackRestrictionId: input.playback?.restrictionId ?? null,
        pipeline: { source: { sourcePath: input.sourcePath } },
      };
      const { result } = await runtime.createIn(tx, "video", ctx, { dedupeKey: input.dedupeKey, within: (t, record) => recordPlayback(t, record.context) });
      if (result.created) deps.logger.info("Recording registered", { org_id: input.orgId, video_id: input.id, stream_id: input.stream.id, drm: ctx.drm, subtitles: ctx.subtitles });
      return result.record;
    },

    /**
     * A video in ERROR tried again (`POST /videos/{id}/retry/`): same id, same source, fresh attempts. The machine's
     * RETRY (failed → fetching or queued) and the first stage's work row it queues commit together: a URL source is fetched again (it may
     * have been fixed), an upload or a recording transcoded again from the file it was registered with. 404 for
     * another organization's id, 409 VIDEO_NOT_RETRYABLE unless ERROR (a second retry racing the first included).
     */
    async retry(orgId: string, id: string): Promise<ActorRecord<VideoContext>> {
      const existing = await runtime.get("video", id, orgId);
      if (!existing) throw new NotFound();
      if (!existing.tags.has("settled") || existing.status !== "ERROR") throw new VideoNotRetryable(existing.status);
      const source = await retrySourceOf(existing.context);
      let result: Awaited<ReturnType<typeof runtime.send<"video">>>;
      try {
        result = await runtime.send("video", id, source ? { type: "RETRY", source } : { type: "RETRY" }, { within: assertQueueRoom });
      } catch (err) {
        if (err instanceof DomainError) throw err;
        deps.logger.error("Cannot queue a retry", { err, org_id: orgId, video_id: id });
        throw new TranscodeQueueFailed();
      }
      if (!result?.changed) throw new VideoNotRetryable(result?.record.status ?? existing.status);
      deps.logger.info("Video retried", { org_id: orgId, video_id: id, first_stage: source ? "transcode" : "fetch-source" });
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
