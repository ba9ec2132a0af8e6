import { hostname } from "node:os";
import { join } from "node:path";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import { createJobQueue } from "../jobs/job-queue.ts";
import { createJobRunner } from "../jobs/job-runner.ts";
import type { Logger } from "../log.ts";
import type { OrgStore } from "../orgs/org-store.ts";
import type { MediaStore } from "../storage/media-store.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import { reapOrphans, type Transcoder } from "../../media/transcoder/index.ts";
import { createFetchHandler } from "./fetch-handler.ts";
import { createTranscodeHandler } from "./transcode-handler.ts";
import { createUploadStore } from "./upload-store.ts";
import { uploadRoutes } from "./upload-routes.ts";
import { videoRoutes } from "./video-routes.ts";
import { createVideoService } from "./video-service.ts";

/** Everything of the video library, wired: service, routes, job queue, runner and transcoder. */
export function createVideoModule(deps: {
  config: Config;
  database: Database;
  runtime: ActorRuntime;
  orgs: OrgStore;
  logger: Logger;
  secret: ServerSecret;
  store: MediaStore;
  guard: (url: URL) => Promise<void>;
  /** `childPidDir`: where native ffmpeg/ffprobe children are recorded (reaped at the next start). */
  createTranscoder: (opts: { childPidDir: string }) => Promise<Transcoder>;
}) {
  const { config, logger } = deps;
  const log = logger.child({ component: "videos" });
  const childPidDir = join(config.dataDir, "run", "media-children");
  const jobs = createJobQueue({ database: deps.database, workerId: `${hostname()}-${process.pid}`, leaseMs: config.jobLeaseMs });
  const uploads = createUploadStore({ database: deps.database, secret: deps.secret, store: deps.store, baseUrl: () => config.baseUrl, maxBytes: config.uploadMaxBytes });

  let transcoder: Promise<Transcoder> | undefined;
  const getTranscoder = () => (transcoder ??= deps.createTranscoder({ childPidDir }));

  const runner = createJobRunner({
    queue: jobs,
    logger: log,
    pollMs: Math.min(1000, Math.max(100, Math.floor(config.jobLeaseMs / 3))),
    // Two stages with their own pools: fetching a URL source, then transcoding it.
    handlers: [
      createFetchHandler({
        runtime: deps.runtime,
        store: deps.store,
        guard: deps.guard,
        concurrency: config.sourceFetchConcurrency,
        perOrgLimit: config.sourceFetchPerOrg,
        maxBytes: config.sourceMaxBytes,
        timeoutMs: config.sourceTimeoutMs,
        stallMs: config.sourceStallMs,
      }),
      createTranscodeHandler({
        runtime: deps.runtime,
        orgs: deps.orgs,
        store: deps.store,
        uploads,
        transcoder: getTranscoder,
        logger: log,
        concurrency: config.transcodeWorkers,
        timeoutMs: config.transcodeTimeoutMs,
      }),
    ],
  });

  const videos = createVideoService({
    runtime: deps.runtime,
    jobs,
    uploads,
    store: deps.store,
    logger: log,
    queueLimit: config.transcodeQueueLimit,
    onQueued: () => runner.wake(),
  });

  return {
    videos,
    jobs,
    runner,
    uploads,
    plugins: [videoRoutes({ videos, uploads, cancelRunning: (id) => runner.cancelEntity(id) })],
    publicPlugins: [uploadRoutes(uploads)],
    start() {
      // Before anything is spawned: ffmpeg children a killed earlier run left behind.
      reapOrphans(childPidDir, (msg, fields) => log.warn(msg, fields));
      runner.start();
    },
    async stop() {
      await runner.stop();
      if (transcoder) await (await transcoder).close();
    },
  };
}

export type VideoModule = ReturnType<typeof createVideoModule>;
