import { rename, rm, stat } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import type { TranscodePayload } from "../../machines/video-payload.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { PermanentWorkError } from "../work/work-runner.ts";
import type { UploadStore } from "./upload-store.ts";

/** The transcode's source as a local file: its object key (null for a file outside DATA_DIR) and size. */
export interface ObtainedSource {
  path: string;
  key: string | null;
  bytes: number;
}

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
 * `work/<video>/source.*`), downloaded to scratch; the original a run repeated after a crash had already kept.
 */
export function createSourceObtainer(deps: { store: MediaStore; uploads: UploadStore }) {
  const { store, uploads } = deps;
  const objects = store.objects;

  /** The original a run repeated after a crash had already kept (`originals/<video>/source.*`). */
  async function keptOriginal(videoId: string, workDir: string): Promise<{ path: string; key: string } | null> {
    for await (const kept of objects.list(store.originalKey(videoId))) {
      if (!basename(kept.key).startsWith("source")) continue;
      const local = objects.localPath(kept.key);
      if (local) return { path: local, key: kept.key };
      const copy = join(workDir, basename(kept.key));
      if (await downloadWhole(objects, kept.key, copy)) return { path: copy, key: kept.key };
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
    async obtain(videoId: string, payload: TranscodePayload, workDir: string): Promise<ObtainedSource | null> {
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
