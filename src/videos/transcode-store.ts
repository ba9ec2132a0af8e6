import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { extname, join, relative, sep } from "node:path";
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
  if (store.objects.kind !== "local") await deleteStored(store, mediaKey);
  await mkdir(outDir, { recursive: true });
  return outDir;
}

/**
 * Step 4 of a transcode, "store outputs": the watch page's entry (the way from the media token back to the video,
 * stored with the ladder, never served), the served tree, and the original kept outside it (storage.original_bytes:
 * never a media URL). Uploads, recordings and fetched copies are consumed.
 */
export async function storeOutputs(opts: { store: MediaStore; videoId: string; outDir: string; source: ObtainedSource; logger: Logger; storedEarly?: Set<string> }): Promise<void> {
  const { store, videoId, source } = opts;
  const objects = store.objects;
  await writeWatchEntry(opts.outDir, videoId);
  const storing = performance.now();
  const stored = objects.kind === "local" ? await objects.putDir(store.mediaKey(videoId), opts.outDir, { move: true }) : await putTree(store, videoId, opts.outDir, opts.storedEarly ?? new Set());
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

/** Playlists and manifests: they name other files, so they are stored after them and deleted before them. */
const isIndex = (key: string) => key.endsWith(".m3u8") || key.endsWith(".mpd");
const isMaster = (key: string) => key.endsWith("/master.m3u8") || key.endsWith("/manifest.mpd");

/**
 * A restarted transcode's outputs in the store deleted (issue 29 item 1): the playlists first (masters first),
 * then the rest, so a player of an early-playable video never reads a playlist naming a segment already deleted.
 */
async function deleteStored(store: MediaStore, mediaKey: string): Promise<void> {
  const indexes: string[] = [];
  for await (const o of store.objects.list(`${mediaKey}/`)) if (isIndex(o.key)) indexes.push(o.key);
  for (const key of indexes.sort((a, b) => Number(isMaster(b)) - Number(isMaster(a)))) await store.objects.delete(key);
  await store.objects.deletePrefix(mediaKey);
}

/**
 * The out dir into the object store in the order a reader needs (issue 29 item 1): every other file first (less
 * the segments stored while the encode ran), then the media playlists and manifests, then the masters; the
 * scratch copy is removed after. Answers what `putDir` answers (every file of the tree, stored now or earlier).
 */
async function putTree(store: MediaStore, videoId: string, outDir: string, storedEarly: Set<string>): Promise<{ files: number; bytes: number }> {
  const prefix = store.mediaKey(videoId);
  const files = (await readdir(outDir, { recursive: true, withFileTypes: true })).filter((d) => d.isFile()).map((d) => join(d.parentPath, d.name));
  const keyOf = (path: string) => `${prefix}/${relative(outDir, path).split(sep).join("/")}`;
  const [others, indexes] = [files.filter((f) => !isIndex(f)), files.filter((f) => isIndex(f) && !isMaster(keyOf(f)))];
  let bytes = 0;
  const put = async (group: string[]) => {
    for (let i = 0; i < group.length; i += 8) {
      await Promise.all(
        group.slice(i, i + 8).map(async (f) => {
          bytes += (await stat(f)).size;
          if (!storedEarly.has(keyOf(f))) await store.objects.putFile(keyOf(f), f);
        }),
      );
    }
  };
  await put(others);
  await put(indexes);
  await put(files.filter((f) => isIndex(f) && isMaster(keyOf(f))));
  await rm(outDir, { recursive: true, force: true });
  return { files: files.length, bytes };
}
