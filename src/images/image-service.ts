import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { randomToken } from "../ids.ts";
import { videoStatus } from "../../machines/video-machine.ts";
import { streamStatus } from "../../machines/livestream-machine.ts";
import type { ImageRenderer } from "../../media/images/render-image.ts";
import type { ImageSpec } from "../../media/images/image-args.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import { ApiError } from "../http/api-error.ts";
import type { Logger } from "../log.ts";
import type { MediaGate, MediaGrant } from "../storage/media-routes.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { ImageQueueFull, type ImageJobs } from "./image-jobs.ts";
import { ANIMATED_DEFAULTS, canonicalImage, type ImageRequest, imageFile, parseImageQuery } from "./image-params.ts";
import { type ImageInput, segmentsInput, wholeFileInput } from "./image-source.ts";

const TYPES: Record<string, string> = { jpg: "image/jpeg", png: "image/png", webp: "image/webp", gif: "image/gif" };
/** Public ids: `vid_` or `ls_` and 20 characters of [0-9A-Za-z] (src/ids.ts); anything else is 404 before any read. */
const VIDEO_ID = /^vid_[0-9A-Za-z]{20}$/;
const STREAM_ID = /^ls_[0-9A-Za-z]{20}$/;
/** A live stream's latest frame is cut again at most this often (per process, per size). */
const LIVE_FRAME_MS = 2000;
/** One cut's limit: a stuck ffmpeg must not hold a slot. */
const CUT_TIMEOUT_MS = 60_000;

interface Asset {
  orgId: string;
  mediaToken: string;
  /** Stored images' key prefix (under the video's served tree: deleted with it), null for a live stream (not stored). */
  prefix: string | null;
  duration: number | null;
  input: (scratch: string, span: { at: number | null; seconds: number }) => Promise<ImageInput | null>;
}

/**
 * Images by URL (issue 27): resolve the asset, let the playback gate judge
 * the request (token audience by file name: `t`/`g`), check the query, then
 * serve the stored image or make it (once: single flight, a fair slot of
 * image-jobs.ts) and store it under `media/<token>/images/`.
 */
export function createImageService(deps: {
  runtime: ActorRuntime;
  objects: ObjectStore;
  dataDir: string;
  mediaToken: (videoId: string) => string;
  liveToken: (streamId: string) => string;
  gate: MediaGate;
  renderer: () => ImageRenderer;
  jobs: ImageJobs;
  logger: Logger;
}) {
  const liveFrames = new Map<string, { at: number; bytes: Uint8Array; etag: string }>();

  async function videoAsset(id: string): Promise<Asset> {
    const record = await deps.runtime.get("video", id);
    const outcome = record?.context.outcome;
    if (!record || videoStatus(record.value) !== "COMPLETED" || !outcome) throw new ApiError("NOT_FOUND", "No such video, or it is not COMPLETED yet.");
    const mediaToken = deps.mediaToken(id);
    // The best rendition: the tallest HLS rung. A DRM video's renditions are encrypted: its kept source instead.
    const best = outcome.renditions.filter((r) => r.url.endsWith(".m3u8")).sort((a, b) => (b.height ?? 0) - (a.height ?? 0))[0];
    const marker = `/media/${mediaToken}/`;
    const path = best ? new URL(best.url).pathname : "";
    const playlistKey = best && path.includes(marker) ? `media/${mediaToken}/${path.slice(path.indexOf(marker) + marker.length)}` : null;
    return {
      orgId: record.orgId,
      mediaToken,
      prefix: `media/${mediaToken}/images`,
      duration: outcome.durationSeconds,
      input: (scratch, span) => (playlistKey ? segmentsInput(deps.objects, playlistKey, scratch, span) : wholeFileInput(deps.objects, `originals/${id}`, scratch, span.at ?? 0)),
    };
  }

  async function streamAsset(id: string): Promise<Asset> {
    const record = await deps.runtime.get("livestream", id);
    if (!record || streamStatus(record.value) !== "LIVE") throw new ApiError("NOT_FOUND", "No such live stream, or it is not LIVE.");
    const mediaToken = deps.liveToken(id);
    return { orgId: record.orgId, mediaToken, prefix: null, duration: null, input: (scratch) => segmentsInput(deps.objects, `live/${mediaToken}/index.m3u8`, scratch, { at: null, seconds: 0 }) };
  }

  /** The ffmpeg spec and the time span of a checked request on an asset. */
  function specOf(req: ImageRequest, asset: Asset): { spec: ImageSpec; at: number | null; seconds: number; canonical: string } {
    if (req.kind === "thumbnail") {
      const at = asset.duration === null ? null : (req.time ?? Math.round((asset.duration / 2) * 1000) / 1000);
      const spec: ImageSpec = { kind: "thumbnail", format: req.format, offset: 0, width: req.width, height: req.height, fitMode: req.fitMode };
      return { spec, at, seconds: 0, canonical: canonicalImage(req, { time: at ?? -1 }) };
    }
    const end = req.end ?? Math.min(req.start + ANIMATED_DEFAULTS.seconds, asset.duration ?? req.start + ANIMATED_DEFAULTS.seconds);
    const seconds = Math.max(0.001, end - req.start);
    return { spec: { kind: "animated", format: req.format, offset: 0, seconds, width: req.width, fps: req.fps }, at: req.start, seconds, canonical: canonicalImage(req, { end }) };
  }

  /** Cuts one image into local scratch; the caller stores or keeps it, then the scratch goes. */
  async function cut(asset: Asset, made: ReturnType<typeof specOf>, scratch: string): Promise<string> {
    const input = await asset.input(scratch, { at: made.at, seconds: made.seconds });
    if (!input) throw new ApiError("NOT_FOUND", "The media of this asset is not available.");
    const name = `out.${made.spec.format}`;
    return deps.renderer().render(input.path, scratch, name, { ...made.spec, offset: input.offset, inputSeek: input.inputSeek }, AbortSignal.timeout(CUT_TIMEOUT_MS));
  }

  function headers(format: string, etag: string, grant: MediaGrant, live: boolean): Record<string, string> {
    const cache = live ? "max-age=2" : "max-age=31536000, immutable";
    return { "content-type": TYPES[format]!, etag, "cache-control": `${grant.private ? "private" : "public"}, ${cache}`, "access-control-allow-origin": "*", "x-content-type-options": "nosniff" };
  }

  const notModified = (request: Request, etag: string) => (request.headers.get("if-none-match") ?? "").split(",").some((t) => t.trim().replace(/^W\//, "") === etag);

  async function slot<T>(orgId: string, key: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await deps.jobs.run(orgId, key, fn);
    } catch (err) {
      if (err instanceof ImageQueueFull) throw new ApiError("RATE_LIMITED", err.message, undefined, { "retry-after": "1" });
      throw err;
    }
  }

  async function withScratch<T>(fn: (scratch: string) => Promise<T>): Promise<T> {
    const scratch = join(deps.dataDir, "work", "images", randomToken(12));
    try {
      return await fn(scratch);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  return {
    /** The answer to `GET /image/{id}/{file}`; throws ApiError for the envelope. */
    async answer(request: Request, id: string, file: string): Promise<Response> {
      const kind = imageFile(file);
      const isVideo = VIDEO_ID.test(id);
      if (!kind || (!isVideo && !STREAM_ID.test(id))) throw ApiError.notFound();
      // A live stream has one image: its latest frame as JPEG.
      if (!isVideo && file !== "thumbnail.jpg") throw ApiError.notFound();
      const asset = isVideo ? await videoAsset(id) : await streamAsset(id);
      const grant = await deps.gate(request, asset.mediaToken, file);
      if (grant instanceof Response) return grant;
      const query = new URL(request.url).searchParams;
      if (!isVideo && query.has("time")) throw ApiError.validation({ time: "is not taken for a live stream: its thumbnail is the latest frame" });
      const parsed = parseImageQuery(kind, query, asset.duration);
      if (!parsed.ok) throw ApiError.validation(parsed.details);
      const made = specOf(parsed.request, asset);
      const hash = createHash("sha256").update(made.canonical).digest("hex").slice(0, 24);
      const format = made.spec.format;

      if (!asset.prefix) {
        const key = `live:${id}:${hash}`;
        const hit = liveFrames.get(key);
        const frame =
          hit && Date.now() - hit.at < LIVE_FRAME_MS
            ? hit
            : await slot(asset.orgId, key, () =>
                withScratch(async (scratch) => {
                  const bytes = new Uint8Array(await Bun.file(await cut(asset, made, scratch)).arrayBuffer());
                  const entry = { at: Date.now(), bytes, etag: `"${createHash("sha256").update(bytes).digest("hex").slice(0, 24)}"` };
                  // Bounded: streams on air × sizes asked; a full map starts again.
                  if (liveFrames.size >= 1000) liveFrames.clear();
                  liveFrames.set(key, entry);
                  return entry;
                }),
              );
        const h = headers(format, frame.etag, grant, true);
        if (notModified(request, frame.etag)) return new Response(null, { status: 304, headers: h });
        return new Response(frame.bytes, { headers: { ...h, "content-length": String(frame.bytes.length) } });
      }

      const key = `${asset.prefix}/${made.spec.kind}-${hash}.${format}`;
      const etag = `"${hash}"`;
      const h = headers(format, etag, grant, false);
      if (notModified(request, etag)) return new Response(null, { status: 304, headers: h });
      let st = await deps.objects.stat(key);
      if (!st) {
        await slot(asset.orgId, key, async () => {
          // Another process may have stored it while this one waited for a slot.
          if (await deps.objects.stat(key)) return;
          const started = performance.now();
          await withScratch(async (scratch) => {
            const out = await cut(asset, made, scratch);
            // Local: a rename into place (atomic); S3: one PUT. Two processes cutting at once store the same bytes twice.
            await deps.objects.putFile(key, out, { type: TYPES[format], move: true });
          });
          deps.logger.info("Image made", { id, kind: made.spec.kind, format, ms: Math.round(performance.now() - started) });
        });
        st = await deps.objects.stat(key);
        if (!st) throw new ApiError("NOT_FOUND", "The media of this asset is not available.");
      }
      return new Response(deps.objects.body(key), { headers: { ...h, "content-length": String(st.size) } });
    },
  };
}

export type ImageService = ReturnType<typeof createImageService>;
