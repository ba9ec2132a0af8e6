import type { Tx } from "../db/create-database.ts";
import { NotFound } from "./errors.ts";
import { assertSubtitles, assertTranscoding, type RecordingInput, type RegisterVideoInput, registerRecordingIn, registerVideo } from "./video-registration.ts";
import { retryVideo } from "./video-retry.ts";
import { type ClipInput, type DerivedVideoInput, registerClip, registerDerived } from "./video-clips.ts";
import { PIPELINE, type VideoServiceDeps } from "./video-service-deps.ts";

export type { RegisterVideoInput } from "./video-registration.ts";

/**
 * The video library's operations: registration (video-registration.ts), retry (video-retry.ts), reads and
 * deletion (here), each a function of the same deps (video-service-deps.ts).
 */
export function createVideoService(deps: VideoServiceDeps) {
  const { runtime } = deps;
  return {
    assertTranscoding,
    /** Whether the organization's recordings can be transcoded: a recording of one without transcoding is not registered. */
    async transcodingConfigured(orgId: string): Promise<boolean> {
      if (!deps.orgs) return true;
      return !!(await deps.orgs.getOrg(orgId))?.settings.transcoding;
    },
    /** The engine's name (GET /organization/ `features.transcripts`), null without one. */
    transcriptEngine: (): string | null => deps.transcripts?.transcriber?.name ?? null,
    assertSubtitles: (requested: boolean | undefined) => assertSubtitles(deps, requested),
    register: (org: Parameters<typeof registerVideo>[1], body: RegisterVideoInput) => registerVideo(deps, org, body),
    registerRecordingIn: (tx: Tx, input: RecordingInput) => registerRecordingIn(deps, tx, input),
    retry: (orgId: string, id: string) => retryVideo(deps, orgId, id),
    /** Issue 27: a clip of a video (`POST /videos/{id}/clips/`), and any video derived from another (a live clip). */
    clip: (org: Parameters<typeof registerVideo>[1], parentId: string, body: ClipInput) => registerClip(deps, org, parentId, body),
    registerDerived: (org: Parameters<typeof registerVideo>[1], input: DerivedVideoInput) => registerDerived(deps, org, input),
    get: (orgId: string, id: string) => runtime.get("video", id, orgId),
    list: (orgId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }) => runtime.list("video", orgId, page),
    remove: (orgId: string, id: string, cancelRunning: (entityId: string) => void) => removeVideo(deps, orgId, id, cancelRunning),
  };
}

/** Deletes the video (404 when absent), cancels its job and removes its files. */
async function removeVideo(deps: VideoServiceDeps, orgId: string, id: string, cancelRunning: (entityId: string) => void): Promise<void> {
  const existing = await deps.runtime.get("video", id, orgId);
  if (!existing) throw new NotFound();
  await deps.runtime.send("video", id, { type: "DELETE" }, { within: (tx) => deps.ledger.cancelForEntity(tx, id, [...PIPELINE]).then(() => undefined) });
  cancelRunning(id);
  await deps.store.remove(id);
  deps.logger.info("Video deleted", { org_id: orgId, video_id: id });
}

export type VideoService = ReturnType<typeof createVideoService>;
