import { Elysia } from "elysia";
import { extname } from "node:path";
import { ApiError } from "../http/api-error.ts";
import type { MediaStore } from "./media-store.ts";
import type { ObjectStore } from "./object-store.ts";

const TYPES: Record<string, string> = {
  ".m3u8": "application/vnd.apple.mpegurl",
  ".ts": "video/mp2t",
  ".m4s": "video/iso.segment",
  ".mp4": "video/mp4",
  ".m4a": "audio/mp4",
  ".mkv": "video/x-matroska",
  ".mpd": "application/dash+xml",
  ".vtt": "text/vtt; charset=utf-8",
  // A video's machine summary (summary.txt, issue 12).
  ".txt": "text/plain; charset=utf-8",
  ".flv": "video/x-flv",
  // A video's thumbnail and storyboard sprite (issue 16).
  ".jpg": "image/jpeg",
};

/**
 * What the playback rules (src/playback) decided for one media request:
 * `token` (a signed asset's `?token=`) is carried into every URI of a served
 * playlist, so a player needs that one token; `private` keeps shared caches
 * from storing the answer.
 */
export interface MediaGrant {
  token: string | null;
  private: boolean;
}
/** The one check of every media route: a grant, or the refusal to answer as is. */
export type MediaGate = (request: Request, mediaToken: string, file: string, opts?: { tokenParam?: string }) => Promise<MediaGrant | Response>;
/** No playback rules (tests of storage alone). */
export const OPEN_GATE: MediaGate = async () => ({ token: null, private: false });

type ServeOpts = { attachmentName?: string; live?: boolean; grant?: MediaGrant };

/** The headers of every media answer: type by extension, ranges, CORS for web players, caching. */
function mediaHeaders(name: string, opts: ServeOpts): Record<string, string> {
  const ext = extname(name).toLowerCase();
  const headers: Record<string, string> = {
    "content-type": TYPES[ext] ?? "application/octet-stream",
    "accept-ranges": "bytes",
    "access-control-allow-origin": "*",
    "cache-control": ext === ".m3u8" || ext === ".mpd" ? (opts.live ? "no-cache" : "public, max-age=60") : "public, max-age=31536000, immutable",
  };
  if (opts.grant?.private) headers["cache-control"] = ext === ".m3u8" || ext === ".mpd" ? "private, no-store" : "private, max-age=31536000, immutable";
  if (opts.attachmentName) headers["content-disposition"] = `attachment; filename="${opts.attachmentName.replace(/"/g, "")}"`;
  return headers;
}

/** A single byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`) of an object of `size` bytes; `end` inclusive; "invalid" → 416. */
function parseRange(header: string, size: number): { start: number; end: number } | "invalid" {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  let start = m && m[1] !== "" ? Number(m[1]) : NaN;
  let end = m && m[2] !== "" ? Number(m[2]) : size - 1;
  if (m && m[1] === "" && m[2] !== "") {
    start = Math.max(0, size - Number(m[2]));
    end = size - 1;
  }
  if (!m || Number.isNaN(start) || start >= size || end < start) return "invalid";
  return { start, end: Math.min(end, size - 1) };
}

/**
 * Serves one stored object with single byte ranges (206, 416); playlists are
 * short-lived, everything else immutable. The bytes go through this process
 * whatever the store: a local file is sent from disk, an S3 object is
 * streamed (never `new Response(s3file)`, which Bun answers with a redirect
 * to a presigned URL, breaking relative segment URLs in playlists).
 */
export async function serveObject(request: Request, objects: ObjectStore, key: string, opts: ServeOpts = {}): Promise<Response> {
  if (opts.grant?.token && (key.endsWith(".m3u8") || key.endsWith(".mpd"))) return servePlaylistWithToken(objects, key, opts.grant.token, opts);
  if (key.endsWith(".m3u8") && !opts.live && !request.headers.get("range")) return serveVideoPlaylist(objects, key, opts);
  const st = await objects.stat(key);
  if (!st) throw ApiError.notFound();
  const size = st.size;
  const headers = mediaHeaders(key, opts);
  const range = request.headers.get("range");
  if (range) {
    const r = parseRange(range, size);
    if (r === "invalid") return new Response(null, { status: 416, headers: { ...headers, "content-range": `bytes */${size}` } });
    return new Response(objects.body(key, { start: r.start, end: r.end + 1 }), {
      status: 206,
      headers: { ...headers, "content-range": `bytes ${r.start}-${r.end}/${size}`, "content-length": String(r.end - r.start + 1) },
    });
  }
  // An empty object: an empty body (a zero-length slice of a remote object is not worth a request).
  return new Response(size === 0 ? null : objects.body(key), { headers: { ...headers, "content-length": String(size) } });
}

/** Appends `token=<jwt>` to a relative URI (one without a scheme), keeping its own query. */
function withToken(uri: string, token: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(uri) || uri.startsWith("//")) return uri;
  return `${uri}${uri.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}`;
}

/** Every URI of an HLS playlist (URI lines and `URI="…"` attributes) with the token appended. */
export function playlistWithToken(text: string, token: string): string {
  return text
    .split("\n")
    .map((line) => {
      const l = line.trim();
      if (l === "") return line;
      if (!l.startsWith("#")) return withToken(l, token);
      return line.replace(/URI="([^"]*)"/g, (_m, uri: string) => `URI="${withToken(uri, token)}"`);
    })
    .join("\n");
}

/** A DASH manifest's segment addresses (`media`, `initialization`, `BaseURL`) with the token appended. */
export function manifestWithToken(xml: string, token: string): string {
  return xml
    .replace(/\b(media|initialization)="([^"]*)"/g, (_m, attr: string, uri: string) => `${attr}="${withToken(uri, token).replace(/&(?!amp;)/g, "&amp;")}"`)
    .replace(/<BaseURL>([^<]*)<\/BaseURL>/g, (_m, uri: string) => `<BaseURL>${withToken(uri, token).replace(/&(?!amp;)/g, "&amp;")}</BaseURL>`);
}

/**
 * Issue 29 item 1: a video's media playlist still growing (an EVENT playlist without `#EXT-X-ENDLIST`, written while
 * it transcodes) changes every segment: `no-cache`, like a live one, so neither a browser nor a shared cache hands
 * a player an old copy for a minute.
 */
export function isGrowingPlaylist(text: string): boolean {
  return text.includes("#EXT-X-PLAYLIST-TYPE:EVENT") && !text.includes("#EXT-X-ENDLIST");
}

async function readText(objects: ObjectStore, key: string): Promise<string> {
  const bytes = await new Response(objects.body(key)).arrayBuffer().catch(() => null);
  if (!bytes) throw ApiError.notFound();
  return new TextDecoder().decode(bytes);
}

/** A public video's playlist, read whole (a few KB) to tell a growing one (`isGrowingPlaylist`). */
async function serveVideoPlaylist(objects: ObjectStore, key: string, opts: ServeOpts): Promise<Response> {
  const text = await readText(objects, key);
  const headers = mediaHeaders(key, { ...opts, live: isGrowingPlaylist(text) });
  return new Response(text, { headers: { ...headers, "content-length": String(Buffer.byteLength(text)) } });
}

/** A playlist (or DASH manifest) of a signed asset, read whole and rewritten so its children and segments carry the request's token. */
async function servePlaylistWithToken(objects: ObjectStore, key: string, token: string, opts: ServeOpts): Promise<Response> {
  const text = await readText(objects, key);
  const body = key.endsWith(".mpd") ? manifestWithToken(text, token) : playlistWithToken(text, token);
  const headers = mediaHeaders(key, { ...opts, live: opts.live || isGrowingPlaylist(text) });
  delete headers["accept-ranges"];
  return new Response(body, { headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } });
}

/**
 * Versions before originals moved out of the served tree kept the source in
 * the media dir's `original/`: it answers 404 like a missing file.
 */
const NEVER_SERVED_TOP = "original";

/** GET /media/<token>/<path>: transcoded renditions and downloads from the object store, never the original. */
export function mediaRoutes(store: MediaStore, objects: ObjectStore, gate: MediaGate = OPEN_GATE) {
  return new Elysia({ name: "media-routes" }).get(
    "/media/:token/*",
    async ({ params, request }) => {
      let rel: string;
      try {
        rel = decodeURIComponent((params as Record<string, string>)["*"] ?? "");
      } catch {
        throw ApiError.notFound();
      }
      const key = store.servedKey(params.token, rel);
      if (!key) throw ApiError.notFound();
      if (key.split("/")[2] === NEVER_SERVED_TOP) throw ApiError.notFound();
      // Dot files are bookkeeping, never media: the watch page's entry (videos/watch-entry.ts), a DRM job's clear scratch.
      if (key.split("/").some((part) => part.startsWith("."))) throw ApiError.notFound();
      // Issue 23: a DRM video (its dash/manifest.mpd beside) transcoded before DRM downloads were encrypted kept a clear
      // Matroska download: never served. One stat, for .mkv requests only.
      if (extname(key).toLowerCase() === ".mkv") {
        const manifest = store.servedKey(params.token, "dash/manifest.mpd");
        if (manifest && (await objects.stat(manifest))) throw ApiError.notFound();
      }
      const grant = await gate(request, params.token, rel);
      if (grant instanceof Response) return grant;
      const isDownload = rel.startsWith("downloads/");
      return serveObject(request, objects, key, { attachmentName: isDownload ? rel.split("/").pop() : undefined, grant });
    },
    { detail: { hide: true } },
  );
}
