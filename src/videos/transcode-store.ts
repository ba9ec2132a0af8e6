import { mkdir, rm } from "node:fs/promises";
import { extname, join } from "node:path";
import { crashPoint } from "../faults.ts";
import type { Logger } from "../log.ts";
import type { MediaStore } from "../storage/media-store.ts";
import type { ObtainedSource } from "./obtained-source.ts";
import { writeWatchEntry } from "./watch-entry.ts";

/**
 * Where the encoder writes, emptied first: outputs are rebuilt from scratch. STORAGE=local: in place (the store's
 * putDir is then a no-op); s3: into scratch, uploaded after.
 */
export async function prepareOutputs(store: MediaStore, videoId: string, workDir: string): Promise<string> {
  const mediaKey = store.mediaKey(videoId);
  const outDir = store.objects.localPath(mediaKey) ?? join(workDir, "media");
  await rm(outDir, { recursive: true, force: true });
  if (store.objects.kind !== "local") await store.objects.deletePrefix(mediaKey);
  await mkdir(outDir, { recursive: true });
  return outDir;
}

/**
 * Step 4 of a transcode, "store outputs": the watch page's entry (the way from the media token back to the video,
 * stored with the ladder, never served), the served tree, and the original kept outside it (storage.original_bytes:
 * never a media URL). Uploads, recordings and fetched copies are consumed.
 */
export async function storeOutputs(opts: { store: MediaStore; videoId: string; outDir: string; source: ObtainedSource; logger: Logger }): Promise<void> {
  const { store, videoId, source } = opts;
  const objects = store.objects;
  await writeWatchEntry(opts.outDir, videoId);
  const storing = performance.now();
  const stored = await objects.putDir(store.mediaKey(videoId), opts.outDir, { move: true });
  const originalKey = `${store.originalKey(videoId)}/source${extname(source.path).slice(0, 8) || ".bin"}`;
  if (source.key !== originalKey) {
    await objects.deletePrefix(store.originalKey(videoId));
    await objects.putFile(originalKey, source.path, { move: true });
    // STORAGE=local: the move consumed it; s3: the source object goes once the original is stored.
    if (source.key && objects.kind !== "local") await objects.delete(source.key);
  }
  // Everything stored, the source consumed, COMPLETED not yet sent: a repeat must find the kept original.
  crashPoint("transcode:after-store");
  if (objects.kind !== "local") {
    opts.logger.info("Transcode outputs stored", { video_id: videoId, files: stored.files, bytes: stored.bytes + source.bytes, ms: Math.round(performance.now() - storing) });
  }
}
