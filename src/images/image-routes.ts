import { Elysia, t } from "elysia";
import { ApiError } from "../http/api-error.ts";
import { errorResponse } from "../http/envelope.ts";
import { errorResponses, operationId } from "../http/openapi-docs.ts";
import type { ImageService } from "./image-service.ts";
import { IMAGE_LIMITS } from "./image-params.ts";

/** Images load from any page (an `<img>` needs no CORS, a canvas or fetch does); refusals carry it too so a script reads them. */
const CORS = { "access-control-allow-origin": "*" };

function refuse(err: unknown): Response {
  if (!(err instanceof ApiError)) throw err;
  const res = errorResponse(err);
  for (const [k, v] of Object.entries(CORS)) res.headers.set(k, v);
  return res;
}

/**
 * Query parameters as optional strings for the document: the handler checks them all at once and names each bad one
 * (a typed schema would stop at Elysia's first failure).
 */
const param = (description: string) => t.Optional(t.String({ description }));
const token = param("An asset with `playback_policy: signed`: a playback JWT (RS256, `sub` = the id) with `aud: t` for thumbnails, `aud: g` for animated images.");
const thumbnailQuery = t.Object({
  time: param("Seconds into the video (default: the middle); at most the duration."),
  width: param(`Pixels, 1–${IMAGE_LIMITS.maxSide} (default: the rendition's).`),
  height: param(`Pixels, 1–${IMAGE_LIMITS.maxSide}.`),
  fit_mode: param("`preserve` (default), `crop` or `pad`: how both sides are met."),
  token,
});
const animatedQuery = t.Object({
  start: param("Seconds into the video (default 0)."),
  end: param(`Seconds into the video, after start, at most start + ${IMAGE_LIMITS.maxAnimatedSeconds} (default start + 5, or the end of the video).`),
  width: param(`Pixels, 1–${IMAGE_LIMITS.maxAnimatedWidth} (default 320).`),
  fps: param(`Frames a second, 1–${IMAGE_LIMITS.maxFps} (default 15).`),
  token,
});
const ERRORS = errorResponses(["PERMISSION_DENIED", "NOT_FOUND", "VALIDATION_ERROR", "RATE_LIMITED", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE"]);
const image = (types: string[]) => ({
  200: {
    description:
      "The image. `ETag` names it; `Cache-Control` is public for a public asset (a year: an image of a video never changes), private for a signed or restricted one, 2 s for a live stream's latest frame.",
    content: Object.fromEntries(types.map((t) => [t, { schema: { type: "string", contentMediaType: t } }])),
  },
  304: { description: "`If-None-Match` named the image's current `ETag`." },
});
const ID = { name: "id", in: "path", required: true, description: "A video id (`vid_…`), or for `thumbnail.jpg` a live stream id (`ls_…`).", schema: { type: "string" } };

/**
 * `GET /image/{id}/thumbnail.{jpg|png|webp}` and `/image/{id}/animated.{gif|webp}`
 * (issue 27, Mux's image URLs): no API key; a signed asset's token in
 * `?token=`. Two routes with one handler, so the document has an operation
 * per kind of image; any other file name is the app's 404.
 */
export function imageRoutes(images: ImageService) {
  const handler = async ({ params, request }: { params: { id: string; file: string }; request: Request }) => {
    try {
      return await images.answer(request, params.id, params.file);
    } catch (err) {
      return refuse(err);
    }
  };
  return new Elysia({ name: "image-routes" })
    .get("/image/:id/thumbnail.:format", ({ params, request }) => handler({ params: { id: params.id, file: `thumbnail.${(params as Record<string, string>).format}` }, request }), {
      query: thumbnailQuery,
      detail: {
        operationId: operationId("getThumbnail"),
        tags: ["Images"],
        summary: "A still frame of a video (or a live stream's latest)",
        description: `Made on first request from the video's best rendition and kept in the object store (deleted with the video); later requests are served from there (\`ETag\`, \`If-None-Match\` → 304). \`time\` defaults to the middle of the video. With \`width\` and \`height\` both given, \`fit_mode\` decides: \`preserve\` fits inside the box, \`crop\` fills it (centred cut), \`pad\` fits with black bars; one side alone keeps the aspect ratio. For a live stream id (\`ls_…\`) while LIVE, \`thumbnail.jpg\` is the latest frame (not stored; \`time\` refused). No API key: a signed asset needs \`?token=\` (\`aud: t\`), and playback restrictions judge the Referer. Out-of-range parameters are 422 naming each; an unknown id, a video of no picture or not yet COMPLETED, or a stream not LIVE is 404.`,
        security: [],
        parameters: [ID, { name: "format", in: "path", required: true, schema: { type: "string", enum: ["jpg", "png", "webp"] } }],
        responses: { ...image(["image/jpeg", "image/png", "image/webp"]), ...ERRORS },
      } as never,
    })
    .get("/image/:id/animated.:format", ({ params, request }) => handler({ params: { id: params.id, file: `animated.${(params as Record<string, string>).format}` }, request }), {
      query: animatedQuery,
      detail: {
        operationId: operationId("getAnimatedImage"),
        tags: ["Images"],
        summary: "An animated GIF or WebP of a span of a video",
        description: `From \`start\` (default 0) to \`end\` (default start + 5 s), at most ${IMAGE_LIMITS.maxAnimatedSeconds} s and within the video; \`width\` at most ${IMAGE_LIMITS.maxAnimatedWidth} (default 320, height follows), \`fps\` at most ${IMAGE_LIMITS.maxFps} (default 15). Made on first request, kept and served like thumbnails. A signed asset needs \`?token=\` with \`aud: g\`.`,
        security: [],
        parameters: [ID, { name: "format", in: "path", required: true, schema: { type: "string", enum: ["gif", "webp"] } }],
        responses: { ...image(["image/gif", "image/webp"]), ...ERRORS },
      } as never,
    });
}
