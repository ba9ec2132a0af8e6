import type { VideoContext } from "../../machines/video-payload.ts";
import type { ActorRecord } from "../actors/actor-runtime.ts";
import type { Tx } from "../db/create-database.ts";
import { DomainError } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Organization } from "../orgs/org-store.ts";
import type { PlaybackPolicy } from "../orgs/org-settings.ts";
import { staticRenditionsRefusal, uniqueNames } from "../orgs/static-rendition-names.ts";
import { DrmNotAvailable, InvalidSourceUrl, StaticRenditionsRefused, SubtitlesUnavailable, TranscodeNotConfigured, TranscodeQueueFailed } from "./errors.ts";
import { assertQueueRoom, recordPlayback, type VideoServiceDeps } from "./video-service-deps.ts";

export interface RegisterVideoInput {
  source_url: string;
  title?: string;
  drm_enabled?: boolean;
  subtitles?: boolean;
  tags?: Record<string, unknown>;
  playback_policy?: PlaybackPolicy;
  playback_restriction_id?: string;
  static_renditions?: string[];
}

/** A live recording as `registerRecordingIn` takes it. */
export interface RecordingInput {
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
}

function titleFrom(url: URL): string {
  const last = decodeURIComponent(url.pathname.split("/").filter(Boolean).pop() ?? "");
  return (last || url.hostname).slice(0, 200);
}

/** The fields every new video starts with. */
const FRESH = { progress: 0, transcoderId: null, outcome: null, error: null } as const;

/** Issue 23: TRANSCODE_NOT_CONFIGURED (409, nothing created) on every path that would queue a transcode: registration and upload slots. */
export function assertTranscoding(org: Organization): void {
  if (!org.settings.transcoding) throw new TranscodeNotConfigured();
}

/** `subtitles: true` with no engine installed: 422 naming what to install, before anything is created. */
export function assertSubtitles(deps: VideoServiceDeps, requested: boolean | undefined): void {
  if (requested && !deps.transcripts?.transcriber) throw new SubtitlesUnavailable(deps.transcripts?.unavailableReason ?? "no speech-to-text engine was given to this service");
}

/**
 * Issue 27 item 4: the static renditions a new video asks for, its own or the organization's default. Its
 * own must name `highest`, `audio-only` or rungs of the ladder, and not come with `drm_enabled` (a DRM video
 * gets no clear copy: 422); the default on a DRM video is kept, each listed errored (DRM_PROTECTED).
 */
function staticRenditionsFor(org: Organization, body: RegisterVideoInput): string[] {
  if (body.static_renditions === undefined || body.static_renditions === null) return org.settings.staticRenditions;
  const names = uniqueNames(body.static_renditions);
  if (body.drm_enabled && names.length > 0) throw new StaticRenditionsRefused("a DRM video gets no clear copy: leave static_renditions out (or []) with drm_enabled");
  const refusal = staticRenditionsRefusal(
    names,
    (org.settings.transcoding?.ladder ?? []).map((r) => r.name),
  );
  if (refusal) throw new StaticRenditionsRefused(refusal);
  return names;
}

/** The source URL, http(s) only (422 otherwise). */
function parseSourceUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidSourceUrl();
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new InvalidSourceUrl();
  return url;
}

/** `POST /videos/`: checks, then the actor and its first work row in one transaction; idempotent on the source URL. */
export async function registerVideo(deps: VideoServiceDeps, org: Organization, body: RegisterVideoInput): Promise<{ created: boolean; record: ActorRecord<VideoContext> }> {
  const url = parseSourceUrl(body.source_url);
  assertTranscoding(org);
  if (body.drm_enabled && !org.settings.features.drm) throw new DrmNotAvailable();
  assertSubtitles(deps, body.subtitles);
  const staticRenditions = staticRenditionsFor(org, body);
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
    ...FRESH,
    stream: null,
    playbackPolicy: playback.policy,
    playbackRestrictionId: playback.restrictionId,
    // An upload is on disk already; a URL is fetched by its own stage first.
    pipeline: { source: uploadId ? { uploadId } : null },
    staticRenditions,
  };
  const result = await createVideo(deps, ctx, sourceUrl);
  return { created: result.created, record: result.record };
}

/** The actor and its first work row in one transaction, under the queue's bound (shared with clips: video-clips.ts). */
export async function createVideo(deps: VideoServiceDeps, ctx: VideoContext, dedupeKey: string | undefined) {
  let result: Awaited<ReturnType<typeof deps.runtime.create<"video">>>;
  try {
    result = await deps.runtime.create("video", ctx, {
      dedupeKey,
      // The machine queues its first stage in the creation's own transaction (a video never exists without its
      // work); recordings are registered elsewhere, whatever the queue's length.
      within: async (tx, record) => {
        await assertQueueRoom(deps, tx);
        await recordPlayback(deps, tx, record.context);
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
 * A live recording enters the library as a video of kind
 * LIVESTREAM_RECORDING (no VIDEO_UPLOADED), inside the caller's
 * transaction: the one that ends the stream, so the stream's ENDED and
 * the recording's existence commit together. Whatever the queue's length:
 * the broadcast already happened. The dedupe key makes a repeated end
 * reuse the same recording.
 */
export async function registerRecordingIn(deps: VideoServiceDeps, tx: Tx, input: RecordingInput): Promise<ActorRecord<VideoContext>> {
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
    ...FRESH,
    stream: input.stream,
    playbackPolicy: input.playback?.policy ?? "public",
    playbackRestrictionId: input.playback?.restrictionId ?? null,
    pipeline: { source: { sourcePath: input.sourcePath } },
  };
  const { result } = await deps.runtime.createIn(tx, "video", ctx, { dedupeKey: input.dedupeKey, within: (t, record) => recordPlayback(deps, t, record.context) });
  if (result.created) deps.logger.info("Recording registered", { org_id: input.orgId, video_id: input.id, stream_id: input.stream.id, drm: ctx.drm, subtitles: ctx.subtitles });
  return result.record;
}
