import { mkdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { TranscodePayload } from "../../machines/video-payload.ts";
import type { Transcoder } from "../../media/transcoder/index.ts";
import type { MediaStore } from "../storage/media-store.ts";
import type { ObtainedSource } from "./obtained-source.ts";
import { asWorkError } from "./video-failure.ts";

/** A stored file as a local path: the object's own file (STORAGE=local) or a whole download into `dir`. */
export type LocalCopy = (key: string, dir: string) => Promise<string | null>;
/** The original an owner's transcode kept (`originals/<owner>/source.*`) as a local file, or null. */
export type KeptOriginal = (ownerId: string, dir: string) => Promise<{ path: string; key: string } | null>;

export interface ClipSourceDeps {
  store: MediaStore;
  transcoder: () => Promise<Transcoder>;
}

/**
 * Step 1 of a clip's transcode, "obtain source" with a trim (issue 27 item 5): the whole source (the parent video's
 * kept original, or a live clip's recording so far at `sourceKey`) cut to `payload.trim`, frame accurate, into the
 * clip's work dir; the rest of the pipeline (plan → encode → store → outcome) runs on the cut as on any source, and
 * the store step keeps the cut as the clip's own original. From then on the clip needs nothing of its parent.
 *
 * Null (SOURCE_MISSING; the machine fails a clip with SOURCE_VIDEO_DELETED) when the whole source is gone: the
 * parent deleted before the cut was made, or during it (a cut that failed is blamed on the parent only when the
 * parent's original is gone after it). A run repeated after the store step finds the clip's own kept original,
 * already cut: it is not cut twice.
 */
export async function obtainClipSource(
  deps: ClipSourceDeps & { keptOriginal: KeptOriginal; localCopy: LocalCopy },
  videoId: string,
  payload: TranscodePayload & { trim: { start: number; end: number } },
  workDir: string,
  signal: AbortSignal,
): Promise<ObtainedSource | null> {
  const own = await deps.keptOriginal(videoId, workDir);
  if (own) return { ...own, bytes: (await stat(own.path)).size };
  const wholeDir = join(workDir, "whole");
  await mkdir(wholeDir, { recursive: true });
  const whole = async () =>
    payload.parentVideoId ? ((await deps.keptOriginal(payload.parentVideoId, wholeDir))?.path ?? null) : payload.sourceKey ? deps.localCopy(payload.sourceKey, wholeDir) : null;
  const input = await whole();
  if (!input) return null;
  const cutDir = join(workDir, "cut");
  await rm(cutDir, { recursive: true, force: true });
  await mkdir(cutDir, { recursive: true });
  const transcoder = await deps.transcoder();
  let path: string;
  try {
    path = await transcoder.cut({ input, outDir: cutDir, start: payload.trim.start, end: payload.trim.end }, { signal });
  } catch (err) {
    if (!signal.aborted && payload.parentVideoId && !(await parentStillThere(deps, payload.parentVideoId))) return null;
    throw asWorkError(err);
  }
  // A downloaded copy of the whole source (STORAGE=s3) is scratch; the cut is what the store step keeps.
  await rm(wholeDir, { recursive: true, force: true });
  return { path, key: null, bytes: (await stat(path)).size };
}

const parentStillThere = (deps: ClipSourceDeps, parentId: string) => hasObjects(deps.store, deps.store.originalKey(parentId));

async function hasObjects(store: MediaStore, prefix: string): Promise<boolean> {
  for await (const _ of store.objects.list(prefix)) return true;
  return false;
}

/**
 * Whether a clip's transcode can run again (a retry): its own kept original (the cut, stored by an earlier run), or
 * what it is cut from: the parent's kept original, or a live clip's copy of the recording (`sourceKey`).
 */
export async function clipSourceThere(store: MediaStore, clipId: string, payload: TranscodePayload): Promise<boolean> {
  if (await hasObjects(store, store.originalKey(clipId))) return true;
  if (payload.parentVideoId) return hasObjects(store, store.originalKey(payload.parentVideoId));
  return payload.sourceKey ? (await store.objects.stat(payload.sourceKey)) !== null : false;
}
