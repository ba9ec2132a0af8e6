import { Elysia } from "elysia";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { success } from "../http/envelope.ts";
import { videoClipInput } from "./clip-schemas.ts";
import type { DrmTokens } from "./drm-tokens.ts";
import { createVideoClipDoc } from "./video-route-docs.ts";
import { videoResource } from "./video-resource.ts";
import { idParams } from "./video-schemas.ts";
import type { VideoService } from "./video-service.ts";

/** Issue 27 item 5: `POST /videos/{id}/clips/` (video-clips.ts). */
export function clipRoutes(deps: { videos: VideoService; tokens: DrmTokens }) {
  return new Elysia({ name: "clip-routes", prefix: API_PREFIX }).use(apiContext()).post(
    "/videos/:id/clips/",
    async ({ auth, params, body, set }) => {
      const input = videoClipInput.parse(body);
      const record = await deps.videos.clip(auth.org, params.id, input);
      set.status = 201;
      return success(videoResource(record, { licenseUrl: (id) => deps.tokens.mint(id).url }), "Clip registered; transcoding queued.");
    },
    { permission: "videos.create", params: idParams, detail: createVideoClipDoc() },
  );
}
