import type { Config } from "../../config.ts";
import type { Database, Tx } from "../../db/create-database.ts";
import type { Logger } from "../../log.ts";
import type { NewEvent } from "../../outbox/outbox.ts";
import { createSecretCipher } from "../../secrets/secret-cipher.ts";
import type { ServerSecret } from "../../secrets/server-secret.ts";
import type { LiveIngest } from "../live-ingest.ts";
import type { LivestreamService } from "../livestream-service.ts";
import { type OutputInput, prepareOutputs } from "./output-input.ts";
import { outputRoutes } from "./output-routes.ts";
import { createOutputRunner } from "./output-runner.ts";
import { createOutputStore } from "./output-store.ts";

/**
 * Simulcast targets of live streams (issue 26 item 2), wired: the table and
 * its sealed targets, the API, and the runner that sends the broadcasts
 * this process holds.
 */
export function createLiveOutputs(deps: {
  config: Config;
  database: Database;
  secret: ServerSecret;
  ingest: LiveIngest;
  livestreams: LivestreamService;
  /** The outbound guard's host check (src/net): private and loopback targets refused unless ALLOW_PRIVATE_NETWORK=1. */
  checkHost: (host: string) => Promise<void>;
  appendEvents: (tx: Tx, events: NewEvent[]) => Promise<unknown>;
  subscribedEvents?: (tx: Tx, orgId: string) => Promise<ReadonlySet<string>>;
  logger: Logger;
}) {
  const store = createOutputStore({
    database: deps.database,
    cipher: createSecretCipher(deps.secret.derive("live-output-targets")),
    maxPerStream: deps.config.liveOutputsPerStream,
    appendEvents: deps.appendEvents,
    subscribedEvents: deps.subscribedEvents,
  });
  const runner = createOutputRunner({
    store,
    held: () => deps.ingest.held(),
    broadcastOf: (id) => {
      const entry = deps.ingest.local(id);
      return entry && !entry.closing ? entry.broadcast : undefined;
    },
    checkHost: deps.checkHost,
    logger: deps.logger,
  });
  return {
    store,
    runner,
    plugin: outputRoutes({ livestreams: deps.livestreams, store, checkHost: deps.checkHost, changed: runner.poke }),
    /** `outputs` of a stream's creation, checked (422 `details.outputs`) before the stream is made. */
    prepare: (inputs: readonly OutputInput[]) => prepareOutputs(inputs, deps.checkHost, "outputs"),
    /** The outbound guard's check of a target's host (the settings screen adds targets as the API does). */
    checkHost: deps.checkHost,
    start: () => runner.start(),
    stop: () => runner.stop(),
  };
}

export type LiveOutputs = ReturnType<typeof createLiveOutputs>;
