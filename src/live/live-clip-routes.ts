import { Elysia } from "elysia";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { success } from "../http/envelope.ts";
import { doc } from "../http/openapi-docs.ts";
import { liveClipInput } from "../videos/clip-schemas.ts";
import { VideoResourceSchema } from "../videos/video-resource-schema.ts";
import { videoResource } from "../videos/video-resource.ts";
import { idParams } from "../videos/video-schemas.ts";
import { createLiveClip, LIVE_CLIP_WINDOW_SECONDS, type LiveClipDeps } from "./live-clips.ts";

const input = liveClipInput(LIVE_CLIP_WINDOW_SECONDS);

const createLiveClipDoc = () =>
  doc({
    operationId: "createLiveClip",
    body: input.schema,
    bodyRequired: false,
    tags: ["Live streams"],
    summary: "Clip a live stream",
    description: `While the stream is LIVE: a new video of the last \`seconds\` of the broadcast (at most the live window, ${LIVE_CLIP_WINDOW_SECONDS} s, its default; less when less was recorded), cut from the recording written so far, with \`source_stream_id\` naming the stream. It is transcoded like any video (VIDEO_UPLOADED, VIDEO_TRANSCODING_STARTED, then COMPLETED or FAILED) and playable before the broadcast ends; it inherits the stream's DRM flag, subtitles, playback policy and restriction. Errors: 404 for an id of another organization; 409 STREAM_NOT_LIVE (\`details.status\`) when the stream is not LIVE or has no media yet; 422 naming \`seconds\`; 429 RATE_LIMITED (counted with POST /videos/).`,
    ok: 201,
    data: VideoResourceSchema,
    dataDescription: "The clip (GET /videos/{id}/ shape), status TRANSCODING.",
    errors: ["NOT_FOUND", "VALIDATION_ERROR", "STREAM_NOT_LIVE", "TRANSCODE_NOT_CONFIGURED", "TRANSCODE_QUEUE_FAILED"],
  });

/** Issue 27 item 5: `POST /livestreams/{id}/clips/` (live-clips.ts). */
export function liveClipRoutes(deps: LiveClipDeps) {
  return new Elysia({ name: "live-clip-routes", prefix: API_PREFIX }).use(apiContext()).post(
    "/livestreams/:id/clips/",
    async ({ auth, params, body, set }) => {
      const record = await createLiveClip(deps, auth.org, params.id, input.parse(body));
      set.status = 201;
      return success(videoResource(record), "Live clip registered; transcoding queued.");
    },
    { permission: "videos.create", params: idParams, detail: createLiveClipDoc() },
  );
}
