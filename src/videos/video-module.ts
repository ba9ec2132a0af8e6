import { join } from "node:path";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import type { RateLimiter } from "../http/rate-limiter.ts";
import type { Logger } from "../log.ts";
import type { OrgStore } from "../orgs/org-store.ts";
import type { MediaStore } from "../storage/media-store.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import type { WorkQueue } from "../work/work-ledger.ts";
import type { WorkHandlers } from "../work/work-runner.ts";
import type { VideoWork } from "./video-work.ts";
import { reapOrphans, type Transcoder } from "../../media/transcoder/index.ts";
import type { Transcriber } from "../../media/stt/types.ts";
import { createDrmKeys, type DrmKeys } from "./drm-keys.ts";
import { drmLicenceRoutes } from "./drm-licence-routes.ts";
import type { AssetPlayback } from "../playback/asset-playback.ts";
import type { MediaGate } from "../storage/media-routes.ts";
import { createDrmTokens, type DrmTokens } from "./drm-tokens.ts";
import { createFetchHandler } from "./fetch-handler.ts";
import { createTranscodeHandler } from "./transcode-handler.ts";
import { createUploadStore, type UploadStore } from "./upload-store.ts";
import { uploadRoutes } from "./upload-routes.ts";
import { tusRoutes } from "./tus-routes.ts";
import { createTusUploads, type TusUploads } from "./tus-uploads.ts";
import { videoRoutes } from "./video-routes.ts";
import { clipRoutes } from "./clip-routes.ts";
import { watchRoutes } from "./watch-routes.ts";
import { createVideoService } from "./video-service.ts";

/** What the video module is given by the composition root (src/service.ts). */
export interface VideoModuleDeps {
  config: Config;
  database: Database;
  runtime: ActorRuntime;
  ledger: WorkQueue<VideoWork>;
  orgs: OrgStore;
  logger: Logger;
  secret: ServerSecret;
  store: MediaStore;
  /** Issue 27 (src/playback): a new video's playback rules, and the check of every media route (here: the DRM licence). */
  playback: AssetPlayback;
  gate: MediaGate;
  guard: (url: URL) => Promise<void>;
  /** The API's limiter: the ClearKey licence route (no API key) counts per token and per client address. */
  rateLimiter: RateLimiter;
  /** `childPidDir`: where native ffmpeg/ffprobe children are recorded (reaped at the next start). */
  createTranscoder: (opts: { childPidDir: string }) => Promise<Transcoder>;
  /** The speech-to-text engine made once at start (media/stt), or null with the reason shown to a caller asking for subtitles. */
  transcripts: { transcriber: Transcriber | null; unavailableReason: string };
  /** Wakes the work runner (a video was queued) and aborts an entity's running work here (a video was deleted). */
  work: { wake: () => void; cancelEntity: (entityId: string) => boolean };
  /** Each completed transcode's media and wall seconds (src/ops metrics). */
  onTranscoded?: (t: { backend: string; mediaSeconds: number; wallSeconds: number }) => void;
}

/** Everything of the video library, wired: service, routes, the work handlers of its pipeline, and the transcoder. */
export function createVideoModule(deps: VideoModuleDeps) {
  const { config, logger } = deps;
  const log = logger.child({ component: "videos" });
  const childPidDir = join(config.dataDir, "run", "media-children");
  const { uploads, tus } = uploadParts(deps, log);

  // DRM: content keys sealed in `drm_keys`, licence tokens signed under the server secret.
  const drmKeys = createDrmKeys({ database: deps.database, secret: deps.secret });
  const drmTokens = createDrmTokens({ secret: deps.secret, baseUrl: () => config.baseUrl, ttlMs: config.drmTokenTtlMs });

  let transcoder: Promise<Transcoder> | undefined;
  const getTranscoder = () => (transcoder ??= deps.createTranscoder({ childPidDir }));

  const handlers = pipelineHandlers(deps, log, { uploads, drm: { keys: drmKeys, tokens: drmTokens }, transcoder: getTranscoder });

  const videos = createVideoService({
    runtime: deps.runtime,
    ledger: deps.ledger,
    uploads,
    store: deps.store,
    logger: log,
    playback: deps.playback,
    queueLimit: config.transcodeQueueLimit,
    onQueued: () => deps.work.wake(),
    transcripts: deps.transcripts,
    orgs: deps.orgs,
  });

  return {
    videos,
    uploads,
    drm: { keys: drmKeys, tokens: drmTokens },
    /** Aborts a video's running transcode here (DELETE /videos/{id}/ and the settings screen's delete). */
    cancelRunning: (id: string) => {
      deps.work.cancelEntity(id);
    },
    handlers,
    plugins: [videoRoutes({ videos, uploads, tokens: drmTokens, cancelRunning: (id) => deps.work.cancelEntity(id) }), clipRoutes({ videos, tokens: drmTokens })],
    publicPlugins: publicPlugins(deps, log, { uploads, tus, drm: { keys: drmKeys, tokens: drmTokens } }),
    /** Before any work runs: ffmpeg children a killed earlier run left behind. */
    start() {
      reapOrphans(childPidDir, (msg, fields) => log.warn(msg, fields));
    },
    async stop() {
      if (transcoder) await (await transcoder).close();
      await deps.transcripts.transcriber?.close();
    },
  };
}

/** The two ways in of an upload: presigned PUT slots, and resumable (tus) uploads ending where a presigned PUT ends. */
function uploadParts(deps: VideoModuleDeps, log: Logger) {
  const { config } = deps;
  const uploads = createUploadStore({ database: deps.database, secret: deps.secret, store: deps.store, baseUrl: () => config.baseUrl, maxBytes: config.uploadMaxBytes });
  // Resumable uploads (tus) end where a presigned PUT ends: a complete slot registered with POST /videos/.
  const tus = createTusUploads({
    database: deps.database,
    secret: deps.secret,
    store: deps.store,
    baseUrl: () => config.baseUrl,
    maxBytes: config.uploadMaxBytes,
    concurrentPerOrg: config.uploadConcurrentPerOrg,
    transcodingConfigured: async (orgId) => !!(await deps.orgs.getOrg(orgId))?.settings.transcoding,
    logger: log,
  });
  return { uploads, tus };
}

type Drm = { keys: DrmKeys; tokens: DrmTokens };

/** The work handlers of the pipeline. */
function pipelineHandlers(deps: VideoModuleDeps, log: Logger, parts: { uploads: UploadStore; drm: Drm; transcoder: () => Promise<Transcoder> }) {
  const { config } = deps;
  // Two stages with their own pools (policies: video-work.ts): fetching a URL source, then transcoding it.
  const handlers: WorkHandlers<VideoWork> = {
    "fetch-source": createFetchHandler({
      runtime: deps.runtime,
      store: deps.store,
      guard: deps.guard,
      maxBytes: config.sourceMaxBytes,
      timeoutMs: config.sourceTimeoutMs,
      stallMs: config.sourceStallMs,
    }),
    transcode: createTranscodeHandler({
      runtime: deps.runtime,
      orgs: deps.orgs,
      store: deps.store,
      uploads: parts.uploads,
      transcoder: parts.transcoder,
      logger: log,
      timeoutMs: config.transcodeTimeoutMs,
      drm: parts.drm,
      transcriber: deps.transcripts.transcriber,
      onTranscoded: deps.onTranscoded,
    }),
  };
  return handlers;
}

/** The routes outside the API's key and JSON parser: the presigned PUT, tus, the ClearKey licence, the watch page. */
function publicPlugins(deps: VideoModuleDeps, log: Logger, parts: { uploads: UploadStore; tus: TusUploads; drm: Drm }) {
  const { config } = deps;
  const { keys: drmKeys, tokens: drmTokens } = parts.drm;
  return [
    uploadRoutes(parts.uploads),
    tusRoutes(parts.tus),
    drmLicenceRoutes({
      keys: drmKeys,
      tokens: drmTokens,
      limiter: deps.rateLimiter,
      logger: log,
      trustProxy: deps.config.trustProxy,
      gate: (request, videoId) => deps.gate(request, deps.store.tokenFor(videoId), "license", { tokenParam: "playback_token" }),
    }),
    // The embeddable player page (issue 16), addressed by the media token.
    watchRoutes({ store: deps.store, runtime: deps.runtime, tokens: drmTokens, baseUrl: () => config.baseUrl, gate: deps.gate }),
  ];
}

export type VideoModule = ReturnType<typeof createVideoModule>;
