import { Elysia } from "elysia";
import { extname, relative, sep } from "node:path";
import { ApiError } from "../http/api-error.ts";
import type { MediaStore } from "./media-store.ts";

const TYPES: Record<string, string> = {
  ".m3u8": "application/vnd.apple.mpegurl",
  ".ts": "video/mp2t",
  ".m4s": "video/iso.segment",
  ".mp4": "video/mp4",
  ".m4a": "audio/mp4",
  ".mkv": "video/x-matroska",
  ".mpd": "application/dash+xml",
  ".vtt": "text/vtt",
  ".flv": "video/x-flv",
};

/** Serves one file with byte ranges; playlists are short-lived, everything else immutable. */
export async function serveFile(request: Request, path: string, opts: { attachmentName?: string; live?: boolean } = {}): Promise<Response> {
  const file = Bun.file(path);
  if (!(await file.exists())) throw ApiError.notFound();
  const size = file.size;
  const ext = extname(path).toLowerCase();
  const headers: Record<string, string> = {
    "content-type": TYPES[ext] ?? "application/octet-stream",
    "accept-ranges": "bytes",
    "access-control-allow-origin": "*",
    "cache-control": ext === ".m3u8" || ext === ".mpd" ? (opts.live ? "no-cache" : "public, max-age=60") : "public, max-age=31536000, immutable",
  };
  if (opts.attachmentName) headers["content-disposition"] = `attachment; filename="${opts.attachmentName.replace(/"/g, "")}"`;
  const range = request.headers.get("range");
  if (range) {
    const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
    let start = m && m[1] !== "" ? Number(m[1]) : NaN;
    let end = m && m[2] !== "" ? Number(m[2]) : size - 1;
    if (m && m[1] === "" && m[2] !== "") {
      start = Math.max(0, size - Number(m[2]));
      end = size - 1;
    }
    if (!m || Number.isNaN(start) || start >= size || end < start) {
      return new Response(null, { status: 416, headers: { ...headers, "content-range": `bytes */${size}` } });
    }
    end = Math.min(end, size - 1);
    return new Response(file.slice(start, end + 1), { status: 206, headers: { ...headers, "content-range": `bytes ${start}-${end}/${size}`, "content-length": String(end - start + 1) } });
  }
  return new Response(file, { headers: { ...headers, "content-length": String(size) } });
}

/**
 * Versions before originals moved out of the served tree kept the source in
 * the media dir's `original/`: it answers 404 like a missing file.
 */
const NEVER_SERVED_TOP = "original";

/** GET /media/<token>/<path>: transcoded renditions and downloads, never the original. */
export function mediaRoutes(store: MediaStore) {
  return new Elysia({ name: "media-routes" }).get(
    "/media/:token/*",
    ({ params, request }) => {
      let rel: string;
      try {
        rel = decodeURIComponent((params as Record<string, string>)["*"] ?? "");
      } catch {
        throw ApiError.notFound();
      }
      const path = store.resolveServed(params.token, rel);
      if (!path) throw ApiError.notFound();
      if (relative(store.mediaRoot, path).split(sep)[1] === NEVER_SERVED_TOP) throw ApiError.notFound();
      const isDownload = rel.startsWith("downloads/");
      return serveFile(request, path, { attachmentName: isDownload ? rel.split("/").pop() : undefined });
    },
    { detail: { hide: true } },
  );
}
