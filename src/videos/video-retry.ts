import type { TranscodePayload, VideoContext } from "../../machines/video-payload.ts";
import type { ActorRecord } from "../actors/actor-runtime.ts";
import { DomainError } from "../errors.ts";
import { clipSourceThere } from "./clip-source.ts";
import { ClipSourceGone, NotFound, TranscodeQueueFailed, VideoNotRetryable } from "./errors.ts";
import { assertQueueRoom, type VideoServiceDeps } from "./video-service-deps.ts";

/**
 * Where a retried video's transcode reads, or null when its URL is fetched again (it may have been fixed): as
 * its registration did (an upload, a URL), or its recording's file.
 */
async function retrySourceOf(deps: VideoServiceDeps, ctx: VideoContext): Promise<TranscodePayload | null> {
  if (ctx.sourceUrl) {
    const uploadId = deps.uploads.idFromSourceUrl(new URL(ctx.sourceUrl));
    return uploadId ? { uploadId } : null;
  }
  // A recording has no URL: the file its transcode was queued with (the stored original is also looked for there);
  // a recording registered before its machine kept it: its last transcode row's.
  if (ctx.pipeline?.source) return ctx.pipeline.source;
  return (await deps.ledger.latest(ctx.id, "transcode"))?.payload ?? {};
}

/**
 * A video in ERROR tried again (`POST /videos/{id}/retry/`): same id, same source, fresh attempts. The machine's
 * RETRY (failed → fetching or queued) and the first stage's work row it queues commit together: a URL source is fetched again (it may
 * have been fixed), an upload or a recording transcoded again from the file it was registered with. 404 for
 * another organization's id, 409 VIDEO_NOT_RETRYABLE unless ERROR (a second retry racing the first included), 409
 * CLIP_SOURCE_GONE for a clip whose source is gone (its parent deleted, a live clip's copy of the recording removed).
 */
export async function retryVideo(deps: VideoServiceDeps, orgId: string, id: string): Promise<ActorRecord<VideoContext>> {
  const { runtime } = deps;
  const existing = await runtime.get("video", id, orgId);
  if (!existing) throw new NotFound();
  if (!existing.tags.has("settled") || existing.status !== "ERROR") throw new VideoNotRetryable(existing.status);
  const source = await retrySourceOf(deps, existing.context);
  const from = existing.context.derivedFrom;
  if (from && source?.trim && !(await clipSourceThere(deps.store, id, source))) {
    throw new ClipSourceGone(from.videoId ? { source_video_id: from.videoId } : { source_stream_id: from.streamId ?? "" });
  }
  let result: Awaited<ReturnType<typeof runtime.send<"video">>>;
  try {
    result = await runtime.send("video", id, source ? { type: "RETRY", source } : { type: "RETRY" }, { within: (tx) => assertQueueRoom(deps, tx) });
  } catch (err) {
    if (err instanceof DomainError) throw err;
    deps.logger.error("Cannot queue a retry", { err, org_id: orgId, video_id: id });
    throw new TranscodeQueueFailed();
  }
  if (!result?.changed) throw new VideoNotRetryable(result?.record.status ?? existing.status);
  deps.logger.info("Video retried", { org_id: orgId, video_id: id, first_stage: source ? "transcode" : "fetch-source" });
  deps.onQueued();
  return result.record;
}
