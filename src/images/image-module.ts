import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import type { MediaGate } from "../storage/media-routes.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { createImageRenderer, type ImageRenderer } from "../../media/images/render-image.ts";
import { createImageJobs } from "./image-jobs.ts";
import { imageRoutes } from "./image-routes.ts";
import { createImageService } from "./image-service.ts";

/** An organization's cuts waiting beyond this are refused (429): the queue of one cannot grow without bound. */
const MAX_QUEUED_PER_ORG = 32;

/** Images by URL (issue 27 item 3), wired: `GET /image/{id}/…` (public plugin) and the renderer, made on first use. */
export function createImageModule(deps: {
  config: Config;
  runtime: ActorRuntime;
  objects: ObjectStore;
  mediaToken: (videoId: string) => string;
  liveToken: (streamId: string) => string;
  gate: MediaGate;
  logger: Logger;
}) {
  let renderer: ImageRenderer | undefined;
  // MEDIA_BACKEND=wasm also cuts images with ffmpeg.wasm; otherwise native ffmpeg when it is on PATH (render-image.ts).
  const backend = deps.config.mediaBackend === "wasm" ? "wasm" : "auto";
  const jobs = createImageJobs({ total: deps.config.imageJobs, perOrg: deps.config.imageJobsPerOrg, maxQueuedPerOrg: MAX_QUEUED_PER_ORG });
  const images = createImageService({
    runtime: deps.runtime,
    objects: deps.objects,
    dataDir: deps.config.dataDir,
    mediaToken: deps.mediaToken,
    liveToken: deps.liveToken,
    gate: deps.gate,
    renderer: () => (renderer ??= createImageRenderer({ backend })),
    jobs,
    logger: deps.logger.child({ component: "images" }),
  });
  return {
    images,
    jobs,
    publicPlugins: [imageRoutes(images)],
    async stop() {
      await renderer?.close();
    },
  };
}

export type ImageModule = ReturnType<typeof createImageModule>;
