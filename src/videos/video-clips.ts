import { parseMediaPlaylist } from "../../media/transcoder/index.ts";
import type { TranscodePayload, VideoContext } from "../../machines/video-payload.ts";
import type { ActorRecord } from "../actors/actor-runtime.ts";
import { InvalidInput } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Organization } from "../orgs/org-store.ts";
import type { PlaybackPolicy } from "../orgs/org-settings.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { NotFound, VideoNotCompleted } from "./errors.ts";
import { assertTranscoding, createVideo } from "./video-registration.ts";
import type { VideoServiceDeps } from "./video-service-deps.ts";

export interface ClipInput {
  start_time: number;
  end_time: number;
  title?: string;
}

/** What makes a derived video (a clip of a video or of a live stream): where it comes from, what it inherits. */
export interface DerivedVideoInput {
  /** Given when the clip's files are stored before its registration (a live clip's recording so far). */
  id?: string;
  title: string;
  derivedFrom: NonNullable<VideoContext["derivedFrom"]>;
  /** The transcode's source: a parent's original or a stored file, with the span kept. */
  source: TranscodePayload & { trim: { start: number; end: number } };
  drm: boolean;
  subtitles: boolean;
  playback: { policy: PlaybackPolicy; restrictionId: string | null };
}

/** A span written as people read it: `1.5`, not `1.500000`. */
const secondsText = (s: number) => String(Math.round(s * 1000) / 1000);

/**
 * The parent's length in seconds, as exact as stored: its tallest HLS rendition's playlist (the sum of its
 * segments), else (a DRM video: DASH only) the whole seconds of its outcome.
 */
async function lengthOf(store: MediaStore, ctx: VideoContext): Promise<number> {
  const outcome = ctx.outcome;
  const best = outcome?.renditions.filter((r) => r.url.endsWith(".m3u8")).sort((a, b) => (b.height ?? 0) - (a.height ?? 0))[0];
  const marker = `/media/${store.tokenFor(ctx.id)}/`;
  const path = best ? new URL(best.url).pathname : "";
  if (path.includes(marker)) {
    const key = `${store.mediaKey(ctx.id)}/${path.slice(path.indexOf(marker) + marker.length)}`;
    if (await store.objects.stat(key)) {
      const total = parseMediaPlaylist(await new Response(store.objects.body(key)).text()).totalDuration;
      if (total > 0) return total;
    }
  }
  return outcome?.durationSeconds ?? 0;
}

/**
 * `POST /videos/{id}/clips/`: a new video of `[start_time, end_time)` of a COMPLETED video of the caller's
 * organization (404 for another's, 409 VIDEO_NOT_COMPLETED otherwise), `end_time` at most its length (422 naming
 * the field). The clip inherits the parent's DRM flag, subtitles, playback policy and restriction; it is
 * transcoded like any video (VIDEO_UPLOADED, then STARTED and COMPLETED or FAILED), from the parent's kept
 * original cut in its source step (clip-source.ts).
 */
export async function registerClip(deps: VideoServiceDeps, org: Organization, parentId: string, body: ClipInput): Promise<ActorRecord<VideoContext>> {
  assertTranscoding(org);
  const parent = await deps.runtime.get("video", parentId, org.id);
  if (!parent) throw new NotFound();
  if (parent.status !== "COMPLETED") throw new VideoNotCompleted(parent.status);
  const length = await lengthOf(deps.store, parent.context);
  const details: Record<string, string> = {};
  if (body.start_time >= length) details.start_time = `must be less than the video's length, ${secondsText(length)} s`;
  if (body.end_time <= body.start_time) details.end_time = "must be greater than start_time";
  else if (body.end_time > length + 0.001) details.end_time = `must be at most the video's length, ${secondsText(length)} s`;
  if (Object.keys(details).length > 0) throw new InvalidInput(details);
  const p = parent.context;
  return registerDerived(deps, org, {
    title: body.title ?? `${p.title} (${secondsText(body.start_time)}-${secondsText(body.end_time)} s)`.slice(0, 200),
    derivedFrom: { videoId: p.id, streamId: null, startTime: body.start_time, endTime: body.end_time },
    source: { parentVideoId: p.id, trim: { start: body.start_time, end: body.end_time } },
    drm: p.drm,
    subtitles: p.subtitles && !!deps.transcripts?.transcriber,
    playback: { policy: p.playbackPolicy ?? "public", restrictionId: p.playbackRestrictionId ?? null },
  });
}

/** A video derived from another (a clip): its actor, queued at once with its trimmed source, in one transaction. */
export async function registerDerived(deps: VideoServiceDeps, org: Organization, input: DerivedVideoInput): Promise<ActorRecord<VideoContext>> {
  const ctx: VideoContext = {
    id: input.id ?? newId("vid"),
    orgId: org.id,
    title: input.title,
    kind: "UPLOAD",
    sourceUrl: null,
    drm: input.drm,
    subtitles: input.subtitles,
    tags: null,
    createdAt: new Date().toISOString(),
    progress: 0,
    transcoderId: null,
    outcome: null,
    error: null,
    stream: null,
    playbackPolicy: input.playback.policy,
    playbackRestrictionId: input.playback.restrictionId,
    derivedFrom: input.derivedFrom,
    pipeline: { source: input.source },
  };
  return (await createVideo(deps, ctx, undefined)).record;
}
