import { Elysia, type Static } from "elysia";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { ApiError } from "../http/api-error.ts";
import { pageOf } from "../http/cursor.ts";
import { success } from "../http/envelope.ts";
import { createPageCache, createViewCache, notFoundResponse, okJson, pageJson } from "../http/view-cache.ts";
import { DeletedSchema, doc } from "../http/openapi-docs.ts";
import type { DrmTokens } from "./drm-tokens.ts";
import { VideoNotDrmProtected } from "./errors.ts";
import type { UploadStore } from "./upload-store.ts";
import { videoResource } from "./video-resource.ts";
import { DrmTokenSchema, RegisteredVideoSchema, UploadUrlSchema, VideoListSchema, VideoResourceSchema } from "./video-resource-schema.ts";
import { idParams, registerVideoInput, uploadUrlInput, videoListQuery } from "./video-schemas.ts";
import type { VideoService } from "./video-service.ts";

const tags = ["Videos"];

export function videoRoutes(deps: { videos: VideoService; uploads: UploadStore; tokens: DrmTokens; cancelRunning: (entityId: string) => void }) {
  const { videos } = deps;
  // Every answer carrying a DRM video hands out a licence token minted for it (the stored events keep theirs).
  const resource = (record: Parameters<typeof videoResource>[0]) => videoResource(record, { licenseUrl: (id) => deps.tokens.mint(id).url });
  const views = createViewCache<Parameters<typeof videoResource>[0]>();
  const pages = createPageCache();
  return new Elysia({ name: "video-routes", prefix: API_PREFIX })
    .use(apiContext)
    .post(
      "/videos/",
      async ({ auth, body, set }) => {
        const { created, record } = await videos.register(auth.org, registerVideoInput.parse(body));
        set.status = created ? 201 : 200;
        const view = resource(record);
        return success(
          { asset: { public_id: record.id, status: view.video.status, kind: view.video.kind, title: view.video.title, created_at: view.video.created_at }, ...view } satisfies Static<
            typeof RegisteredVideoSchema
          >,
          created ? "Video registered; transcoding queued." : "This source_url is already registered; returning the existing video.",
        );
      },
      {
        permission: "videos.create",
        detail: doc({
          operationId: "createVideo",
          body: registerVideoInput.schema,
          tags,
          summary: "Register a video",
          description:
            "Registers a video from an http(s) `source_url` and queues a transcode (VIDEO_UPLOADED fires). Idempotent on `source_url` per organization: a second call returns the existing asset with 200 and queues nothing. Unknown fields are refused (422 naming each); `null` on an optional field is the same as leaving it out. `subtitles: true` transcribes the speech (machine-made WebVTT `transcript_url`, a subtitle rendition in the HLS master, a machine summary `summary_url`); 422 with `details.subtitles` when the server has no speech-to-text engine. Errors: 409 TRANSCODE_NOT_CONFIGURED, 409 DRM_NOT_AVAILABLE, 422 VALIDATION_ERROR, 429 RATE_LIMITED (20/min per organization), 502 TRANSCODE_QUEUE_FAILED (with `Retry-After`).",
          ok: 201,
          data: RegisteredVideoSchema,
          alsoOk: "The `source_url` was already registered: the existing video, nothing queued.",
          dataDescription: "201 `data.asset.public_id` and the video (GET shape); 200 with the existing video when `source_url` is already registered.",
          errors: ["VALIDATION_ERROR", "TRANSCODE_NOT_CONFIGURED", "DRM_NOT_AVAILABLE", "TRANSCODE_QUEUE_FAILED"],
        }),
      },
    )
    .post(
      "/videos/upload-url/",
      async ({ auth, body, set }) => {
        const input = uploadUrlInput.parse(body);
        deps.videos.assertTranscoding(auth.org);
        set.status = 201;
        return success(await deps.uploads.create(auth.org.id, input.size_bytes), "Upload URL created. PUT the file there, then register `source_url`.");
      },
      {
        permission: "videos.create",
        detail: doc({
          operationId: "createUploadUrl",
          body: uploadUrlInput.schema,
          bodyRequired: false,
          tags,
          summary: "Presign an upload",
          description:
            "Returns a single-use `upload_url` (PUT the raw file, expires in one hour) and the `source_url` to pass to POST /videos/ afterwards. Rate limited to 60/min per organization. An organization without transcoding gets 409 TRANSCODE_NOT_CONFIGURED (nothing created), as on POST /videos/.",
          ok: 201,
          data: UploadUrlSchema,
          dataDescription: "`upload_url`, `method`, `source_url`, `expires_at`, `max_bytes`.",
          errors: ["VALIDATION_ERROR", "TRANSCODE_NOT_CONFIGURED"],
        }),
      },
    )
    .get(
      "/videos/",
      async ({ auth, request }) => {
        const query = videoListQuery.parse(request.url);
        // The filter rides on the page object down to ActorRuntime.list (an `and` on actors.status / the stored kind).
        const filter = { status: query.status, contextKind: query.kind };
        const { page, next_cursor, rows } = await pageOf(query, (p) => videos.list(auth.org.id, Object.assign(p, filter)));
        // Items serialized once per record version, pages once per read (view-cache.ts); a DRM video's licence token is minted per answer.
        if (page.some((r) => r.context.drm))
          return okJson(
            pageJson(
              page.map((r) => (r.context.drm ? JSON.stringify(resource(r)) : views(r, 0, () => resource(r)))),
              next_cursor,
            ),
          );
        return okJson(
          pages(rows, next_cursor ?? "", () =>
            pageJson(
              page.map((r) => views(r, 0, () => resource(r))),
              next_cursor,
            ),
          ),
        );
      },
      {
        permission: "videos.read",
        query: videoListQuery.schema,
        detail: doc({
          operationId: "listVideos",
          tags,
          summary: "List videos",
          description:
            "Newest first. `limit` (1-100, default 20) and `cursor` (from `next_cursor`). Filters: `status` (TRANSCODING, COMPLETED or ERROR; several separated by commas) and `kind` (UPLOAD or LIVESTREAM_RECORDING). Any other query parameter, a repeated one or a bad value is 422 naming it.",
          data: VideoListSchema,
          dataDescription: "`items` (GET shape each) and `next_cursor`.",
          errors: ["VALIDATION_ERROR"],
        }),
      },
    )
    .get(
      "/videos/:id/",
      async ({ auth, params }) => {
        const record = await videos.get(auth.org.id, params.id);
        if (!record) return notFoundResponse();
        // Serialized once per record version (view-cache.ts), as in the list; a DRM video's licence token is minted per answer.
        return okJson(record.context.drm ? JSON.stringify(resource(record)) : views(record, 0, () => resource(record)));
      },
      {
        permission: "videos.read",
        params: idParams,
        detail: doc({
          operationId: "getVideo",
          tags,
          summary: "Get a video",
          description:
            "The event `data` shape (video, renditions, error, storage, stream) plus `video.progress` (0-100) while transcoding. A completed DRM video's `drm_license_url` carries a token minted for this answer (valid `DRM_TOKEN_TTL_MS`, 24 h by default).",
          data: VideoResourceSchema,
          dataDescription: "`video`, `renditions`, `error`, `storage`, `stream`.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    )
    .post(
      "/videos/:id/drm-token/",
      async ({ auth, params }) => {
        const record = await videos.get(auth.org.id, params.id);
        if (!record) throw ApiError.notFound();
        if (!record.context.drm) throw new VideoNotDrmProtected();
        const minted = deps.tokens.mint(record.id);
        return success({ drm_license_url: minted.url, expires_at: minted.expiresAt.toISOString() } satisfies Static<typeof DrmTokenSchema>, "Licence token minted.");
      },
      {
        permission: "videos.read",
        params: idParams,
        detail: doc({
          operationId: "createDrmToken",
          tags,
          summary: "Mint a DRM licence token",
          description:
            "A fresh `drm_license_url` for a video registered with `drm_enabled: true`: the ClearKey licence endpoint (POST /drm/clearkey/{id}/license) with a signed token in `?token=`, valid until `expires_at` (`DRM_TOKEN_TTL_MS`, 24 h by default). Tokens are not stored and cannot be revoked; each call mints a new one. Another organization's video is 404 as a missing one; a video without DRM is 409 DRM_NOT_AVAILABLE (`details.drm_enabled`). No body.",
          data: DrmTokenSchema,
          dataDescription: "`drm_license_url` (string), `expires_at` (ISO 8601).",
          errors: ["NOT_FOUND", "DRM_NOT_AVAILABLE", "VALIDATION_ERROR"],
        }),
      },
    )
    .post(
      "/videos/:id/retry/",
      async ({ auth, params }) => {
        videos.assertTranscoding(auth.org);
        const record = await videos.retry(auth.org.id, params.id);
        return success(resource(record), "Video queued again; transcoding events follow.");
      },
      {
        permission: "videos.create",
        params: idParams,
        detail: doc({
          operationId: "retryVideo",
          tags,
          summary: "Retry a failed video",
          description:
            "Tries a video in ERROR again: the same id and source, fresh attempts (a URL source is fetched again, an upload or a recording transcoded again from its file). The video is TRANSCODING again with `error` null; VIDEO_UPLOADED does not fire again (the asset was registered once), VIDEO_TRANSCODING_STARTED and then VIDEO_TRANSCODING_COMPLETED or VIDEO_TRANSCODING_FAILED fire for the new attempt. Counts in the `POST /videos/` limit (20/min per organization): it queues a billed transcode. No body. Errors: 404 NOT_FOUND (also another organization's id), 409 VIDEO_NOT_RETRYABLE when the video is not in ERROR (`details.status` is its status; a second retry racing the first gets it too), 409 TRANSCODE_NOT_CONFIGURED when the organization has transcoding off, 502 TRANSCODE_QUEUE_FAILED (with `Retry-After`).",
          data: VideoResourceSchema,
          dataDescription: "The video (GET shape), `video.status` TRANSCODING.",
          errors: ["NOT_FOUND", "VIDEO_NOT_RETRYABLE", "TRANSCODE_NOT_CONFIGURED", "TRANSCODE_QUEUE_FAILED", "VALIDATION_ERROR"],
        }),
      },
    )
    .delete(
      "/videos/:id/",
      async ({ auth, params }) => {
        await videos.remove(auth.org.id, params.id, deps.cancelRunning);
        return success({ id: params.id, deleted: true }, "Video deleted.");
      },
      {
        permission: "videos.delete",
        params: idParams,
        detail: doc({
          operationId: "deleteVideo",
          tags,
          summary: "Delete a video",
          description: "Cancels a running transcode and deletes the video's files.",
          data: DeletedSchema,
          dataDescription: "`id`, `deleted: true`.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    );
}
