import { extname, join } from "node:path";
import type { VideoContext } from "../../machines/video-payload.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { JobRow } from "../jobs/job-queue.ts";
import { exponentialBackoffMs, PermanentJobError, type JobContext, type JobHandler, type JobResult } from "../jobs/job-runner.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { fetchSource } from "./fetch-source.ts";
import { failVideo, type TranscodePayload } from "./transcode-handler.ts";
import { FETCH_JOB, TRANSCODE_JOB } from "./video-service.ts";

/**
 * The `fetch-source` stage of a video registered by URL: stream the source
 * into the video's work dir, then hand the same job row to the transcode
 * queue. Fetches have their own pool (SOURCE_FETCH_CONCURRENCY) and a
 * per-organization share (SOURCE_FETCH_PER_ORG), so a slow or stalled source
 * never holds a transcode worker and one organization's slow sources leave
 * room for the others'. Only a fully fetched source is queued for transcoding.
 */
export function createFetchHandler(deps: {
  runtime: ActorRuntime;
  store: MediaStore;
  guard: (url: URL) => Promise<void>;
  concurrency: number;
  perOrgLimit: number;
  maxBytes: number;
  timeoutMs: number;
  stallMs: number;
}): JobHandler {
  const { runtime, store } = deps;
  return {
    type: FETCH_JOB,
    concurrency: deps.concurrency,
    perOrgLimit: deps.perOrgLimit,
    retryDelayMs: exponentialBackoffMs,

    async run(job: JobRow, { signal, logger }: JobContext): Promise<JobResult> {
      const record = await runtime.get<VideoContext>("video", job.entityId);
      if (record?.status !== "TRANSCODING") return;
      const ctx = record.context;
      if (!ctx.sourceUrl) throw new PermanentJobError("INPUT_UNSUPPORTED", "The video has no source.");
      const workDir = await store.ensure(store.workDir(ctx.id));
      const ext =
        extname(new URL(ctx.sourceUrl).pathname)
          .replace(/[^.\w]/g, "")
          .slice(0, 8) || ".bin";
      const dest = join(workDir, `source${ext}`);
      const bytes = await fetchSource(ctx.sourceUrl, dest, { signal, maxBytes: deps.maxBytes, timeoutMs: deps.timeoutMs, stallMs: deps.stallMs, guard: deps.guard });
      logger.info("Source fetched", { video_id: ctx.id, bytes });
      const payload: TranscodePayload = { sourcePath: dest, fetched: true };
      return { next: { type: TRANSCODE_JOB, payload } };
    },

    onFailed: (job: JobRow, err: unknown) => failVideo({ runtime, store }, job, err),
  };
}
