import { blockingVerdict, playlistEdge } from "../../media/hls/ll-playlist.ts";
import { ApiError } from "../http/api-error.ts";
import { type MediaGrant, playlistWithToken } from "../storage/media-routes.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import type { PlaylistWaiter } from "./playlist-waiter.ts";

/** The longest hold of a blocking reload: three target durations (RFC 8216bis 6.2.5.2), at least 3 s. */
const holdMs = (targetDuration: number) => Math.max(3000, 3000 * targetDuration);
/** A hinted part not written after this long is answered 404 (a part takes one PART-TARGET; a stalled publisher). */
const PART_HOLD_MS = 3000;

/** A media route's 400 (RFC 8216bis asks for it; HLS players read the status, not a JSON envelope). */
const badRequest = (why: string) => new Response(`${why}\n`, { status: 400, headers: { "content-type": "text/plain", "access-control-allow-origin": "*" } });

const count = (v: string | null) => (v !== null && /^\d{1,9}$/.test(v) ? Number(v) : v === null ? null : Number.NaN);

/**
 * A playlist GET with `_HLS_msn` (and `_HLS_part`): held until the stored
 * playlist lists that segment or part, then answered with it (the one read
 * that satisfied it, so the answer comes within one store read of the write).
 * Not a number, `_HLS_part` without `_HLS_msn`, or too far ahead: 400. At the
 * hold's end the current playlist (200). null: not a blocking request.
 */
export async function blockingRequest(request: Request, key: string, waiter: PlaylistWaiter, grant: MediaGrant | null | undefined): Promise<Response | null> {
  const q = new URL(request.url).searchParams;
  const msn = count(q.get("_HLS_msn"));
  const part = count(q.get("_HLS_part"));
  if (msn === null && part === null) return null;
  if (msn === null || Number.isNaN(msn) || Number.isNaN(part)) return badRequest("_HLS_msn must be a whole number, and _HLS_part needs it");
  let tooFar = false;
  let target = 2;
  const text = await waiter.wait(
    key,
    (t) => {
      const edge = playlistEdge(t);
      target = edge.targetDuration || target;
      const verdict = blockingVerdict(edge, msn, part);
      tooFar = verdict === "bad";
      return verdict !== "wait";
    },
    holdMs(target),
  );
  if (text === null) throw ApiError.notFound();
  if (tooFar) return badRequest("_HLS_msn or _HLS_part is too far ahead of the playlist");
  const body = grant?.token ? playlistWithToken(text, grant.token) : text;
  return new Response(body, {
    headers: {
      "content-type": "application/vnd.apple.mpegurl",
      "access-control-allow-origin": "*",
      "cache-control": grant?.private ? "private, no-store" : "no-cache",
      "content-length": String(Buffer.byteLength(body)),
    },
  });
}

/**
 * A GET of a part not stored yet (the playlist's EXT-X-PRELOAD-HINT): held
 * until the playlist lists it (it is stored before), then served as usual
 * (null). Anything else, or a stored part: null at once. 404 after
 * PART_HOLD_MS.
 */
export async function partRequest(file: string, key: string, objects: ObjectStore, waiter: PlaylistWaiter): Promise<Response | null> {
  if (!/^(?:t[0-9a-z]+-)?part-\d+-\d+\.m4s$/.test(file) || (await objects.stat(key)) !== null) return null;
  const playlistKey = key.slice(0, key.lastIndexOf("/") + 1) + "index.m3u8";
  const listed = `URI="${file}"`;
  const text = await waiter.wait(playlistKey, (t) => t.includes(listed) && !t.includes(`PRELOAD-HINT:TYPE=PART,${listed}`), PART_HOLD_MS);
  if (text === null || !text.includes(listed) || text.includes(`PRELOAD-HINT:TYPE=PART,${listed}`)) throw ApiError.notFound();
  return null;
}
