import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { MediaStore } from "../storage/media-store.ts";

/**
 * The watch page is addressed by the video's media token (an HMAC of its id:
 * not reversible, no column). The transcode writes this small file into the
 * media dir beside the ladder so `/watch/<token>` can find the video; it goes
 * wherever the ladder goes (local disk or the bucket) and is deleted with it.
 * Its name starts with a dot: media-routes never serves dot files.
 */
export const WATCH_ENTRY = ".watch.json";

export async function writeWatchEntry(outDir: string, videoId: string): Promise<void> {
  await writeFile(join(outDir, WATCH_ENTRY), JSON.stringify({ video_id: videoId }));
}

/** The video id a token's watch entry names, or null (no entry: unknown token, deleted, or not transcoded yet). */
export async function readWatchEntry(store: MediaStore, token: string): Promise<string | null> {
  const key = store.servedKey(token, WATCH_ENTRY);
  if (!key || !(await store.objects.stat(key))) return null;
  try {
    const body = store.objects.body(key);
    const text = body instanceof Blob ? await body.text() : await new Response(body).text();
    const id = (JSON.parse(text) as { video_id?: unknown }).video_id;
    return typeof id === "string" ? id : null;
  } catch {
    return null;
  }
}

/** `{BASE_URL}/watch/<media token>`: derived from the media URL so BASE_URL (with any path prefix) is applied the same way. */
export function watchUrl(store: MediaStore, videoId: string): string {
  const token = store.tokenFor(videoId);
  return `${store.url(videoId, "").slice(0, -`/media/${token}/`.length)}/watch/${token}`;
}
