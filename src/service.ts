import { livestreamMachine, streamStatus } from "../machines/livestream-machine.ts";
import { videoMachine, videoStatus } from "../machines/video-machine.ts";
import { createActorRuntime, type ActorRuntime } from "./actors/actor-runtime.ts";
import type { Config } from "./config.ts";
import { createDatabase, ensurePrivateDir, type Database } from "./db/create-database.ts";
import { createApp, type App } from "./http/create-app.ts";
import { canonicalRequest } from "./http/canonical-request.ts";
import { createRateLimiter, type RateLimiter } from "./http/rate-limiter.ts";
import { createLogger, type Logger } from "./log.ts";
import { createOrgStore, type OrgStore } from "./orgs/org-store.ts";
import { organizationRoutes } from "./routes/organization-routes.ts";
import { loadServerSecret, type ServerSecret } from "./secrets/server-secret.ts";
import { createActorSealers, sealLegacyActorSecrets } from "./secrets/actor-secrets.ts";
import { createMediaStore, type MediaStore } from "./storage/media-store.ts";
import { mediaRoutes } from "./storage/media-routes.ts";
import { createVideoModule, type VideoModule } from "./videos/video-module.ts";
import { createTranscoder } from "../media/transcoder/index.ts";
import { createLiveModule, type LiveModule } from "./live/live-module.ts";
import { createOutboundGuard, type OutboundGuard } from "./net/outbound-guard.ts";
import { createWebhookModule, type WebhookModule } from "./webhooks/webhook-module.ts";

export interface Service {
  config: Config;
  logger: Logger;
  database: Database;
  orgs: OrgStore;
  rateLimiter: RateLimiter;
  runtime: ActorRuntime;
  secret: ServerSecret;
  outbound: OutboundGuard;
  store: MediaStore;
  videos: VideoModule;
  live: LiveModule;
  webhooks: WebhookModule;
  app: App;
  /** Starts background work (flushers, dispatchers, ingest) and the HTTP listener. */
  listen(): Promise<{ port: number }>;
  stop(): Promise<void>;
}

/**
 * Wires the whole service from a config. `main.ts` calls it for real; tests call
 * it with a temporary DATA_DIR and a random port, so they run the real thing.
 */
export async function createService(config: Config, opts: { logger?: Logger } = {}): Promise<Service> {
  const logger = opts.logger ?? createLogger({ level: config.logLevel === "silent" ? "silent" : config.logLevel });
  ensurePrivateDir(config.dataDir); // 0700: database, media, uploads, the key file
  const database = await createDatabase({ url: config.databaseUrl, authToken: config.databaseAuthToken });
  const orgs = createOrgStore(database);
  const rateLimiter = createRateLimiter({ database, logger, windowMs: config.rateLimitWindowMs });
  await rateLimiter.load();
  const secret = loadServerSecret(config.dataDir, config.secretKey);
  // Stream keys inside actor contexts are stored sealed (src/secrets/actor-secrets.ts).
  const sealers = createActorSealers(secret);
  const runtime = createActorRuntime({
    database,
    logger,
    kinds: {
      video: { machine: videoMachine, statusOf: videoStatus, ...sealers.video },
      livestream: { machine: livestreamMachine, statusOf: streamStatus, ...sealers.livestream },
    },
  });
  const store = createMediaStore({ dataDir: config.dataDir, baseUrl: () => config.baseUrl, secret });
  // One guard for every outbound request (webhooks, source fetches): SSRF refusal after DNS.
  const outbound = createOutboundGuard({ allowPrivate: config.allowPrivateNetwork });
  const videos = createVideoModule({
    config,
    database,
    runtime,
    orgs,
    logger,
    secret,
    store,
    guard: (url) => outbound.check(url),
    // Created on first use: the wasm pool costs memory and start-up time that an idle API should not pay.
    createTranscoder: async ({ childPidDir }) =>
      createTranscoder({ backend: config.mediaBackend, workers: config.transcodeWorkers, childPidDir, logger: (o: Record<string, unknown>) => logger.debug("transcoder", o) }),
  });
  const live = createLiveModule({ config, runtime, videos: videos.videos, secret, logger });
  await sealLegacyActorSecrets(database, sealers, live.urls.keyDigest);
  const webhooks = createWebhookModule({ config, database, runtime, logger, secret, guard: outbound });
  const app = createApp({
    orgs,
    rateLimiter,
    logger,
    plugins: [organizationRoutes(), ...videos.plugins, ...live.plugins, ...webhooks.plugins],
    publicPlugins: [mediaRoutes(store), ...videos.publicPlugins, ...live.publicPlugins],
  });

  let server: ReturnType<typeof Bun.serve> | undefined;
  const stoppers: Array<() => Promise<void> | void> = [];

  return {
    config,
    logger,
    database,
    orgs,
    rateLimiter,
    runtime,
    secret,
    outbound,
    store,
    videos,
    live,
    webhooks,
    app,
    async listen() {
      rateLimiter.start();
      stoppers.push(() => rateLimiter.stop());
      videos.start();
      stoppers.push(() => videos.stop());
      await webhooks.start();
      stoppers.push(() => webhooks.stop());
      server = Bun.serve({
        port: config.port,
        hostname: config.hostname,
        // Uploads stream large bodies; JSON bodies are capped by the app itself.
        maxRequestBodySize: 1024 * 1024 * 1024 * 64,
        idleTimeout: 60,
        // Routing must not depend on the Host header (src/http/canonical-request.ts).
        fetch: (req) => app.handle(canonicalRequest(req)),
      });
      // PORT=0 (tests, benches) picks a free port: public URLs must name the real one.
      if (config.port === 0) config.baseUrl = `http://127.0.0.1:${server.port}`;
      logger.info("HTTP API listening", { port: server.port, base_url: config.baseUrl });
      // After HTTP: the live module's own player fetches hls_url over HTTP.
      await live.start();
      stoppers.push(() => live.stop());
      return { port: server.port! };
    },
    async stop() {
      server?.stop(true);
      for (const s of stoppers.reverse()) {
        try {
          await s();
        } catch (err) {
          logger.error("Cannot stop a component cleanly", { err });
        }
      }
      database.close();
    },
  };
}
