import { Elysia, type Static } from "elysia";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { ApiError } from "../http/api-error.ts";
import type { AuthContext } from "../http/authenticate.ts";
import { pageOf } from "../http/cursor.ts";
import { success } from "../http/envelope.ts";
import { createPageCache, createViewCache, notFoundResponse, okJson, pageJson } from "../http/view-cache.ts";
import type { DrmTokens } from "./drm-tokens.ts";
import { VideoNotDrmProtected } from "./errors.ts";
import type { UploadStore } from "./upload-store.ts";
import { videoResource } from "./video-resource.ts";
import type { DrmTokenSchema, RegisteredVideoSchema } from "./video-resource-schema.ts";
import { deleteVideoDoc, drmTokenDoc, getVideoDoc, listVideosDoc, registerVideoDoc, retryVideoDoc, uploadUrlDoc } from "./video-route-docs.ts";
import { idParams, registerVideoInput, uploadUrlInput, videoListQuery } from "./video-schemas.ts";
import type { VideoService } from "./video-service.ts";

type Deps = { videos: VideoService; uploads: UploadStore; tokens: DrmTokens; cancelRunning: (entityId: string) => void };
type VideoRecord = Parameters<typeof videoResource>[0];

/** What the handlers share: the deps, the GET shape (with a licence token minted per answer) and the serialization caches. */
function routeContext(deps: Deps) {
  // Every answer carrying a DRM video hands out a licence token minted for it (the stored events keep theirs).
  const resource = (record: VideoRecord) => videoResource(record, { licenseUrl: (id) => deps.tokens.mint(id).url });
  return { ...deps, resource, views: createViewCache<VideoRecord>(), pages: createPageCache() };
}
type Ctx = ReturnType<typeof routeContext>;

export function videoRoutes(deps: Deps) {
  const ctx = routeContext(deps);
  return new Elysia({ name: "video-routes", prefix: API_PREFIX })
    .use(apiContext())
    .post(
      "/videos/",
      async ({ auth, body, set }) => {
        const { created, record } = await ctx.videos.register(auth.org, registerVideoInput.parse(body));
        set.status = created ? 201 : 200;
        return registered(ctx, created, record);
      },
      { permission: "videos.create", detail: registerVideoDoc() },
    )
    .post(
      "/videos/upload-url/",
      async ({ auth, body, set }) => {
        const input = uploadUrlInput.parse(body);
        ctx.videos.assertTranscoding(auth.org);
        set.status = 201;
        return success(await ctx.uploads.create(auth.org.id, input.size_bytes), "Upload URL created. PUT the file there, then register `source_url`.");
      },
      { permission: "videos.create", detail: uploadUrlDoc() },
    )
    .get("/videos/", ({ auth, request }) => listVideos(ctx, auth, request), { permission: "videos.read", query: videoListQuery.schema, detail: listVideosDoc() })
    .get("/videos/:id/", ({ auth, params }) => getVideo(ctx, auth, params.id), { permission: "videos.read", params: idParams, detail: getVideoDoc() })
    .post("/videos/:id/drm-token/", ({ auth, params }) => mintDrmToken(ctx, auth, params.id), { permission: "videos.read", params: idParams, detail: drmTokenDoc() })
    .post(
      "/videos/:id/retry/",
      async ({ auth, params }) => {
        ctx.videos.assertTranscoding(auth.org);
        const record = await ctx.videos.retry(auth.org.id, params.id);
        return success(ctx.resource(record), "Video queued again; transcoding events follow.");
      },
      { permission: "videos.create", params: idParams, detail: retryVideoDoc() },
    )
    .delete(
      "/videos/:id/",
      async ({ auth, params }) => {
        await ctx.videos.remove(auth.org.id, params.id, ctx.cancelRunning);
        return success({ id: params.id, deleted: true }, "Video deleted.");
      },
      { permission: "videos.delete", params: idParams, detail: deleteVideoDoc() },
    );
}

/** `POST /videos/`'s answer: the asset's summary and the video (GET shape). */
function registered(ctx: Ctx, created: boolean, record: VideoRecord) {
  const view = ctx.resource(record);
  return success(
    { asset: { public_id: record.id, status: view.video.status, kind: view.video.kind, title: view.video.title, created_at: view.video.created_at }, ...view } satisfies Static<
      typeof RegisteredVideoSchema
    >,
    created ? "Video registered; transcoding queued." : "This source_url is already registered; returning the existing video.",
  );
}

/** `GET /videos/`: a page of the organization's videos, filtered by status and kind. */
async function listVideos(ctx: Ctx, auth: AuthContext, request: Request): Promise<Response> {
  const { views, resource } = ctx;
  const query = videoListQuery.parse(request.url);
  // The filter rides on the page object down to ActorRuntime.list (an `and` on actors.status / the stored kind).
  const filter = { status: query.status, contextKind: query.kind };
  const { page, next_cursor, rows } = await pageOf(query, (p) => ctx.videos.list(auth.org.id, Object.assign(p, filter)));
  // Items serialized once per record version, pages once per read (view-cache.ts); a DRM video's licence token is minted per answer.
  if (page.some((r) => r.context.drm))
    return okJson(
      pageJson(
        page.map((r) => (r.context.drm ? JSON.stringify(resource(r)) : views(r, 0, () => resource(r)))),
        next_cursor,
      ),
    );
  return okJson(
    ctx.pages(rows, next_cursor ?? "", () =>
      pageJson(
        page.map((r) => views(r, 0, () => resource(r))),
        next_cursor,
      ),
    ),
  );
}

/** `GET /videos/{id}/`: serialized once per record version (view-cache.ts), as in the list; a DRM video's licence token is minted per answer. */
async function getVideo(ctx: Ctx, auth: AuthContext, id: string): Promise<Response> {
  const record = await ctx.videos.get(auth.org.id, id);
  if (!record) return notFoundResponse();
  return okJson(record.context.drm ? JSON.stringify(ctx.resource(record)) : ctx.views(record, 0, () => ctx.resource(record)));
}

/** `POST /videos/{id}/drm-token/`: a fresh licence token for a DRM video. */
async function mintDrmToken(ctx: Ctx, auth: AuthContext, id: string) {
  const record = await ctx.videos.get(auth.org.id, id);
  if (!record) throw ApiError.notFound();
  if (!record.context.drm) throw new VideoNotDrmProtected();
  const minted = ctx.tokens.mint(record.id);
  return success({ drm_license_url: minted.url, expires_at: minted.expiresAt.toISOString() } satisfies Static<typeof DrmTokenSchema>, "Licence token minted.");
}
