import { mkdir, writeFile } from "node:fs/promises";
import { join, posix } from "node:path";
import { parseMediaPlaylist } from "../../media/transcoder/hls-playlist.ts";
import type { ObjectStore } from "../storage/object-store.ts";

/**
 * Where an image's frames come from, as one local file and a time inside it:
 * the segments of an HLS rendition playlist that cover the wanted span
 * (their bytes joined: MPEG-TS segments concatenate, an fMP4 playlist's
 * `EXT-X-MAP` init goes first), or a whole file (a DRM video's kept source).
 * With the local store a single segment is read in place (no copy); with S3
 * only the needed segments are downloaded.
 */
export interface ImageInput {
  path: string;
  /** Seconds into `path` of the wanted time. */
  offset: number;
  /** An indexed file (MP4, Matroska) the demuxer can seek in; joined MPEG-TS segments are decoded from their start. */
  inputSeek: boolean;
}

/** How close to a playlist's end a frame is taken at most: the very end has no frame to show. */
const END_MARGIN = 0.1;

async function bytesOf(objects: ObjectStore, key: string): Promise<Uint8Array | null> {
  if (!(await objects.stat(key))) return null;
  return new Uint8Array(await new Response(objects.body(key)).arrayBuffer());
}

/**
 * The segments of the playlist at `playlistKey` covering `[at, at + seconds]`
 * (`at` null: the last segment, a live stream's latest frame), joined into
 * `scratch/input.<ext>`; null when the playlist or a segment is missing.
 */
export async function segmentsInput(objects: ObjectStore, playlistKey: string, scratch: string, span: { at: number | null; seconds: number }): Promise<ImageInput | null> {
  const text = await bytesOf(objects, playlistKey);
  if (!text) return null;
  const playlistText = new TextDecoder().decode(text);
  const playlist = parseMediaPlaylist(playlistText);
  const segments = playlist.segments;
  if (segments.length === 0) return null;
  const dir = posix.dirname(playlistKey);
  const keyOf = (uri: string) => {
    const k = posix.normalize(posix.join(dir, uri.split("?")[0]!));
    return k.startsWith(`${dir}/`) ? k : null;
  };

  let first = segments.length - 1;
  let last = first;
  let offset = Math.max(0, segments[last]!.duration - END_MARGIN);
  if (span.at !== null) {
    const at = Math.min(span.at, Math.max(0, playlist.totalDuration - END_MARGIN));
    let start = 0;
    first = -1;
    for (let i = 0; i < segments.length; i++) {
      const end = start + segments[i]!.duration;
      if (first < 0 && (at < end || i === segments.length - 1)) {
        first = i;
        offset = at - start;
      }
      if (first >= 0 && (at + span.seconds <= end || i === segments.length - 1)) {
        last = i;
        break;
      }
      start = end;
    }
  }

  const map = /#EXT-X-MAP:.*URI="([^"]+)"/.exec(playlistText)?.[1];
  const keys = [...(map ? [map] : []), ...segments.slice(first, last + 1).map((s) => s.uri)].map(keyOf);
  if (keys.some((k) => k === null)) return null;
  const ext = posix.extname(keys.at(-1)!) || ".ts";
  // The local store, one self-contained segment: ffmpeg reads the stored file itself.
  const local = keys.length === 1 ? objects.localPath(keys[0]!) : null;
  if (local) return { path: local, offset, inputSeek: false };
  const parts: Uint8Array[] = [];
  for (const key of keys) {
    const part = await bytesOf(objects, key!);
    if (!part) return null;
    parts.push(part);
  }
  await mkdir(scratch, { recursive: true });
  const path = join(scratch, `input${ext}`);
  await writeFile(path, Buffer.concat(parts));
  return { path, offset, inputSeek: false };
}

/** A whole stored file (a DRM video's source: its renditions are encrypted) as the input; `at` is its own time. */
export async function wholeFileInput(objects: ObjectStore, prefix: string, scratch: string, at: number): Promise<ImageInput | null> {
  let key: string | null = null;
  for await (const o of objects.list(prefix)) {
    key = o.key;
    break;
  }
  if (!key) return null;
  const local = objects.localPath(key);
  if (local) return { path: local, offset: at, inputSeek: true };
  await mkdir(scratch, { recursive: true });
  const path = join(scratch, `source${posix.extname(key)}`);
  return (await objects.download(key, path)) ? { path, offset: at, inputSeek: true } : null;
}
