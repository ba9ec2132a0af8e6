import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import type { Logger } from "../log.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { registerCollectors } from "./collectors.ts";
import { observeRequests } from "./http-observer.ts";
import { createLiveViewers } from "./live-viewers.ts";
import { createMetrics } from "./metrics.ts";
import { opsRoutes } from "./ops-routes.ts";
import { readinessChecks } from "./readiness.ts";

/**
 * Operations of one service instance: its metrics registry, the live viewer
 * count, /healthz, /readyz and /metrics, and the request observer (access log,
 * request ids, HTTP metrics). The domains report through the narrow callbacks
 * service.ts hands them (`onFinished`, `onTranscoded`, `onAttempt`,
 * `onPlaylistServed`); none of them imports this folder.
 */
export function createOps(deps: {
  config: Config;
  database: Database;
  objects: ObjectStore;
  logger: Logger;
  workTypes: readonly string[];
  /** The RTMP listener's port once listening, else null. */
  rtmpPort: () => number | null;
  /** Broadcasts ingested by this process now. */
  broadcasts: () => number;
}) {
  const logger = deps.logger.child({ component: "ops" });
  const metrics = createMetrics();
  const viewers = createLiveViewers();
  registerCollectors({ metrics, database: deps.database, logger, workTypes: deps.workTypes, viewers, broadcasts: deps.broadcasts });
  const checks = readinessChecks({ config: deps.config, database: deps.database, objects: deps.objects, rtmpPort: deps.rtmpPort });
  return {
    metrics,
    viewers,
    plugin: opsRoutes({ metrics, checks, logger, metricsToken: deps.config.metricsToken }),
    /** Installs the access log, request ids and HTTP metrics on the app (after every route is registered). */
    observe: (app: Parameters<typeof observeRequests>[0]) => observeRequests(app, { metrics, logger: deps.logger.child({ component: "http" }) }),
  };
}

export type Ops = ReturnType<typeof createOps>;
