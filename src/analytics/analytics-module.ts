import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import type { RateLimiter } from "../http/rate-limiter.ts";
import type { Logger } from "../log.ts";
import { analyticsRoutes, beaconRoutes } from "./analytics-routes.ts";
import { createAnalyticsReads } from "./analytics-reads.ts";
import { createAssetLookup } from "./asset-lookup.ts";
import { createBeaconIntake } from "./beacon-intake.ts";
import { createBeaconStore } from "./beacon-store.ts";
import { createBeaconWriter } from "./beacon-writer.ts";
import { createViewCloser } from "./view-closer.ts";
import { createViewerTraits } from "./viewer-traits.ts";
import { createWhepSampler } from "./whep-sampler.ts";

/** Viewer analytics (issue 28), wired: beacon intake, group-commit writer (its writes on a worker thread), view closer + rollups, WHEP sampler, read API. */
export function createAnalyticsModule(deps: {
  config: Config;
  database: Database;
  logger: Logger;
  rateLimiter: RateLimiter;
  holder: string;
  keyOf: (kid: string, orgId: string) => Promise<CryptoKey | null>;
  whepCounts: () => Array<[string, number]>;
}) {
  const logger = deps.logger.child({ component: "analytics" });
  const lookup = createAssetLookup(deps.database);
  const store = createBeaconStore({ database: deps.database, authToken: deps.config.databaseAuthToken, timeoutMs: deps.config.databaseTimeoutMs, logger });
  const writer = createBeaconWriter({ store, logger });
  const intake = createBeaconIntake({
    lookup,
    writer,
    traits: createViewerTraits(),
    limiter: deps.rateLimiter,
    trustProxy: () => deps.config.trustProxy,
    perMinute: () => deps.config.beaconsPerMinutePerAddress,
    keyOf: deps.keyOf,
  });
  const closer = createViewCloser({ database: deps.database, logger });
  const sampler = createWhepSampler({ database: deps.database, logger, holder: deps.holder, counts: deps.whepCounts });
  const reads = createAnalyticsReads(deps.database);
  return {
    intake,
    writer,
    closer,
    reads,
    lookup,
    plugins: [analyticsRoutes({ reads, lookup })],
    publicPlugins: [beaconRoutes(intake)],
    start(): void {
      closer.start(deps.config.analyticsCloseIntervalMs);
      sampler.start();
    },
    async stop(): Promise<void> {
      sampler.stop();
      await closer.stop();
      await writer.stop();
    },
  };
}

export type AnalyticsModule = ReturnType<typeof createAnalyticsModule>;
