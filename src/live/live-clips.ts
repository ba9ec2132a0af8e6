import { copyFile, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { streamStatus } from "../../machines/livestream-machine.ts";
import { DomainError, NotFound } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Organization } from "../orgs/org-store.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import type { VideoService } from "../videos/video-service.ts";
import type { LiveFiles } from "./live-files.ts";
import type { LivestreamService } from "./livestream-service.ts";
import { assembleParts } from "./recording-parts.ts";
import { probeRecording } from "./recording-probe.ts";

/** The live window: how far back a live clip reaches, and its default length (docs/decisions.md, "Clips"). */
export const LIVE_CLIP_WINDOW_SECONDS = 30;

/** `POST /livestreams/{id}/clips/` on a stream that is not LIVE (or LIVE with nothing recorded yet): nothing is created. */
export class StreamNotLive extends DomainError {
  readonly code = "STREAM_NOT_LIVE";
  constructor(status: string) {
    super(`Only a LIVE stream with media can be clipped; this one is ${status}.`, { status });
  }
}

export interface LiveClipDeps {
  livestreams: LivestreamService;
  files: LiveFiles;
  objects: ObjectStore;
  videos: VideoService;
  dataDir: string;
}

/**
 * The broadcast's recording so far, copied whole into `dest`: this process's FLV (it holds the broadcast: the file
 * it is appending to, up to its current end; a last tag cut short is dropped by the demuxer), else (STORAGE=s3,
 * another process holds it) the parts it has uploaded so far (RECORDING_PART_MS behind at most).
 */
async function recordingSoFar(deps: LiveClipDeps, streamId: string, dest: string): Promise<boolean> {
  const copied = await copyFile(deps.files.flvPath(streamId), dest).then(
    () => true,
    () => false,
  );
  if (copied) return true;
  return deps.objects.kind !== "local" && (await assembleParts(deps.objects, streamId, dest)).parts > 0;
}

/**
 * Issue 27 item 5: a video of the last `seconds` of a LIVE stream, available before the broadcast ends. The
 * recording so far is copied to the clip's own object (`work/<clip>/live.flv`, so any process can transcode it),
 * and the clip is a video derived from the stream (`source_stream_id`) whose source step cuts `[length − seconds,
 * length)` of it, as a clip of a video cuts its parent's original. It inherits the stream's DRM flag, subtitles,
 * playback policy and restriction. 404 for another organization's stream; 409 STREAM_NOT_LIVE otherwise.
 */
export async function createLiveClip(deps: LiveClipDeps, org: Organization, streamId: string, body: { seconds?: number; title?: string }) {
  deps.videos.assertTranscoding(org);
  const record = await deps.livestreams.get(org.id, streamId);
  if (!record) throw new NotFound();
  const status = streamStatus(record.value);
  if (status !== "LIVE") throw new StreamNotLive(status);
  const id = newId("vid");
  const key = `work/${id}/live.flv`;
  const scratch = join(deps.dataDir, "work", id, "snapshot");
  await mkdir(scratch, { recursive: true });
  try {
    const copy = join(scratch, "live.flv");
    const probe = (await recordingSoFar(deps, streamId, copy)) ? await probeRecording(copy) : null;
    if (!probe?.hasMedia || probe.durationSeconds <= 0) throw new StreamNotLive(status);
    await deps.objects.putFile(key, copy, { type: "video/x-flv", move: true });
    const length = probe.durationSeconds;
    const seconds = Math.min(body.seconds ?? LIVE_CLIP_WINDOW_SECONDS, length);
    const s = record.context;
    return await deps.videos.registerDerived(org, {
      id,
      title: body.title ?? `${s.title} (last ${Math.round(seconds * 10) / 10} s at ${new Date().toISOString()})`.slice(0, 200),
      derivedFrom: { videoId: null, streamId, startTime: length - seconds, endTime: length },
      source: { sourceKey: key, trim: { start: length - seconds, end: length } },
      drm: s.drm,
      subtitles: !!s.subtitles && !!deps.videos.transcriptEngine(),
      playback: { policy: s.playbackPolicy ?? "public", restrictionId: s.playbackRestrictionId ?? null },
    });
  } catch (err) {
    await deps.objects.delete(key).catch(() => undefined);
    throw err;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
