import { rename, rm, stat } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import type { TranscodePayload } from "../../machines/video-payload.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { PermanentWorkError } from "../work/work-runner.ts";
import type { UploadStore } from "./upload-store.ts";
import { type ClipSourceDeps, obtainClipSource } from "./clip-source.ts";
import type { ObtainedSource } from "./obtained-source.ts";

/**
 * Downloads an object to `path` whole or not at all: into a part file, renamed once complete. A process
 * killed mid-download (`kill -9`, a lost node) left a truncated `path` that the run resuming its work took
 * for the source: an empty one failed the video for good ("input is empty"), a partial one completed it
 * cut short (test/scaleout.test.ts).
 */
async function downloadWhole(objects: MediaStore["objects"], key: string, path: string): Promise<boolean> {
  const part = `${path}.part-${crypto.randomUUID()}`;
  try {
    if (!(await objects.download(key, part))) return false;
    await rename(part, path);
    return true;
  } finally {
    await rm(part, { force: true });
  }
}

/**
 * Step 1 of a transcode, "obtain source": the source as a local file, or null when it must be fetched again (a
 * fetched copy that went missing). In order: the file on this disk (STORAGE=local, an upload or a recording this
 * process still has); its object (STORAGE=s3: `uploads/<id>`, a recording `recordings/<stream>.flv`, a fetched
 * `work/<video>/source.*`), downloaded to scratch; the original a run repeated after a crash had already kept. A
 * clip's (`trim`): its whole source cut to the span (clip-source.ts).
 */
export function createSourceObtainer(deps: { store: MediaStore; uploads: UploadStore } & ClipSourceDeps) {
  const { store, uploads } = deps;
  const objects = store.objects;

  /** A stored object as a local file: its own (STORAGE=local) or a whole download into `dir`. */
  async function localCopy(key: string, dir: string): Promise<string | null> {
    const local = objects.localPath(key);
    if (local) return (await Bun.file(local).exists()) ? local : null;
    const copy = join(dir, basename(key));
    return (await downloadWhole(objects, key, copy)) ? copy : null;
  }

  /**
   * The original an owner's transcode kept (`originals/<video>/source.*`): a run repeated after a crash had already
   * kept its own; a clip's parent's is the clip's whole source.
   */
  async function keptOriginal(videoId: string, workDir: string): Promise<{ path: string; key: string } | null> {
    for await (const kept of objects.list(store.originalKey(videoId))) {
      if (!basename(kept.key).startsWith("source")) continue;
      const path = await localCopy(kept.key, workDir);
      if (path) return { path, key: kept.key };
    }
    return null;
  }

  async function find(videoId: string, payload: TranscodePayload, workDir: string): Promise<{ path: string; key: string | null } | null> {
    const key = payload.uploadId ? uploads.key(payload.uploadId) : (payload.sourceKey ?? (payload.sourcePath ? store.keyOf(payload.sourcePath) : null));
    // A fetched source is found by its key, never by the fetching process's path: on STORAGE=s3 a file there is
    // scratch (another process's, or a copy an earlier run of this one was downloading when it died).
    const path = payload.uploadId ? uploads.path(payload.uploadId) : payload.sourceKey ? objects.localPath(payload.sourceKey) : payload.sourcePath;
    if (path && (await Bun.file(path).exists())) return { path, key };
    if (key && objects.kind !== "local") {
      const copy = join(workDir, `source${extname(key)}`);
      if (await downloadWhole(objects, key, copy)) return { path: copy, key };
    }
    const kept = await keptOriginal(videoId, workDir);
    if (kept) return kept;
    return payload.fetched || !path ? null : { path, key };
  }

  return {
    async obtain(videoId: string, payload: TranscodePayload, workDir: string, signal: AbortSignal): Promise<ObtainedSource | null> {
      // A clip (issue 27): its parent's original or a live recording so far, cut to the span (clip-source.ts).
      if (payload.trim) return obtainClipSource({ ...deps, keptOriginal, localCopy }, videoId, { ...payload, trim: payload.trim }, workDir, signal);
      const found = await find(videoId, payload, workDir);
      if (!found) return null;
      const bytes = (await stat(found.path)).size;
      // A presigned S3 PUT can be repeated until it expires: an object replaced after its registration's check is checked again.
      if (payload.uploadId && objects.kind !== "local") {
        const limit = await uploads.maxBytesOf(payload.uploadId);
        if (limit !== null && bytes > limit) throw new PermanentWorkError("SOURCE_TOO_LARGE", `The upload is larger than ${limit} bytes.`);
      }
      return { ...found, bytes };
    },
  };
}
