import { livestreamMachine, streamStatus } from "../machines/livestream-machine.ts";
import { videoMachine, videoStatus } from "../machines/video-machine.ts";
import { createActorRuntime, type ActorRuntime } from "./actors/actor-runtime.ts";
import type { Config } from "./config.ts";
import { createDatabase, type Database } from "./db/create-database.ts";
import { createApp, type App } from "./http/create-app.ts";
import { createRateLimiter, type RateLimiter } from "./http/rate-limiter.ts";
import { createLogger, type Logger } from "./log.ts";
import { createOrgStore, type OrgStore } from "./orgs/org-store.ts";
import { organizationRoutes } from "./routes/organization-routes.ts";

export interface Service {
  config: Config;
  logger: Logger;
  database: Database;
  orgs: OrgStore;
  rateLimiter: RateLimiter;
  runtime: ActorRuntime;
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
  const database = await createDatabase({ url: config.databaseUrl, authToken: config.databaseAuthToken });
  const orgs = createOrgStore(database);
  const rateLimiter = createRateLimiter({ database, logger });
  await rateLimiter.load();
  const runtime = createActorRuntime({
    database,
    logger,
    kinds: {
      video: { machine: videoMachine, statusOf: videoStatus },
      livestream: { machine: livestreamMachine, statusOf: streamStatus },
    },
  });
  const app = createApp({ orgs, rateLimiter, logger, plugins: [organizationRoutes()] });

  let server: ReturnType<typeof Bun.serve> | undefined;
  const stoppers: Array<() => Promise<void> | void> = [];

  return {
    config,
    logger,
    database,
    orgs,
    rateLimiter,
    runtime,
    app,
    async listen() {
      rateLimiter.start();
      stoppers.push(() => rateLimiter.stop());
      server = Bun.serve({
        port: config.port,
        hostname: config.hostname,
        // Uploads stream large bodies; JSON bodies are capped by the app itself.
        maxRequestBodySize: 1024 * 1024 * 1024 * 64,
        idleTimeout: 60,
        fetch: (req) => app.handle(req),
      });
      logger.info("HTTP API listening", { port: server.port, base_url: config.baseUrl });
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
