import type { VideoContext } from "../../machines/video-payload.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Tx } from "../db/create-database.ts";
import type { Logger } from "../log.ts";
import type { Organization } from "../orgs/org-store.ts";
import type { AssetPlayback } from "../playback/asset-playback.ts";
import type { MediaStore } from "../storage/media-store.ts";
import type { WorkQueue } from "../work/work-ledger.ts";
import type { VideoWork } from "./video-work.ts";
import { TranscodeQueueFull } from "./errors.ts";
import type { UploadStore } from "./upload-store.ts";

/** What the video service's parts (registration, retry, reads, deletion) are given. */
export interface VideoServiceDeps {
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
}

/** The work types of a video's pipeline, queued by its machine: a URL source is fetched first, then transcoded. */
export const PIPELINE = ["fetch-source", "transcode"] as const;

/**
 * The queue's length, read in the transaction that just queued one more stage (the machine's own work row,
 * written with its transition): beyond the limit, the whole transition rolls back.
 */
export async function assertQueueRoom(deps: VideoServiceDeps, tx: Tx): Promise<void> {
  if ((await deps.ledger.countOpen([...PIPELINE], tx)) > deps.queueLimit) throw new TranscodeQueueFull();
}

/** The video's playback rules under its media token, in its creation's transaction (nothing for a public, unrestricted one). */
export function recordPlayback(deps: VideoServiceDeps, tx: Tx, ctx: VideoContext): Promise<void> {
  return deps.playback.recordIn(tx, deps.store.tokenFor(ctx.id), {
    assetId: ctx.id,
    orgId: ctx.orgId,
    policy: ctx.playbackPolicy ?? "public",
    restrictionId: ctx.playbackRestrictionId ?? null,
  });
}
