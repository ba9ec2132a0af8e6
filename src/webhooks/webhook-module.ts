import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import type { Logger } from "../log.ts";
import type { OutboundGuard } from "../net/outbound-guard.ts";
import type { Outbox } from "../outbox/outbox.ts";
import { createEventSealer } from "../secrets/event-sealer.ts";
import { createSecretCipher } from "../secrets/secret-cipher.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import { createDeliverer } from "./deliver.ts";
import { createDeliveryStore } from "./delivery-store.ts";
import { createDispatcher, type DispatcherOptions } from "./dispatcher.ts";
import { createEndpointStore } from "./endpoint-store.ts";
import { createListenHub } from "./listen-hub.ts";
import { listenRoutes } from "./listen-routes.ts";
import { webhookRoutes } from "./webhook-routes.ts";

/** The trusted roots plus WEBHOOK_CA_FILE (a local test receiver's CA): added to, never replacing, the defaults. */
function trustedCas(caFile: string | undefined): string[] | undefined {
  return caFile ? [...rootCertificates, readFileSync(caFile, "utf8")] : undefined;
}

/** Webhooks, wired: endpoint and delivery stores, the dispatcher (woken by outbox commits) and the routes. */
export function createWebhookModule(deps: {
  config: Config;
  database: Database;
  runtime: ActorRuntime;
  logger: Logger;
  secret: ServerSecret;
  /** The domain events to fan out and to stream to listeners (src/outbox). */
  outbox: Outbox;
  guard: OutboundGuard;
  tuning?: Partial<DispatcherOptions>;
}) {
  const { config } = deps;
  const cipher = createSecretCipher(deps.secret.derive("webhook-signing-secrets"));
  const endpoints = createEndpointStore({ database: deps.database, cipher, maxPerOrg: config.webhookEndpointsPerOrg });
  // Payloads and bodies carry what the spec delivers (push credentials, passwords): sealed at rest, as the runtime writes them.
  const events = createEventSealer(deps.secret);
  const deliveries = createDeliveryStore({ database: deps.database, endpoints, events, outbox: deps.outbox, logger: deps.logger });
  const deliver = createDeliverer({ guard: deps.guard, timeoutMs: config.webhookTimeoutMs, ca: trustedCas(config.webhookCaFile) });
  const dispatcher = createDispatcher({
    deliveries,
    endpoints,
    deliver,
    logger: deps.logger,
    retrySchedule: config.webhookRetrySchedule,
    stopGraceMs: Math.min(config.webhookTimeoutMs, 5000),
    leaseMs: config.webhookLeaseMs,
    maxPerOrg: config.webhookInflightPerOrg,
    ...deps.tuning,
  });
  deps.runtime.onOutbox(() => dispatcher.wake());
  // `cli listen` (issue 16): one shared outbox poller per process, woken at once by this process's commits.
  const listen = createListenHub({ outbox: deps.outbox, logger: deps.logger });
  deps.runtime.onOutbox(() => listen.wake());
  const samples = () => ({ baseUrl: config.baseUrl, rtmpUrlBase: `rtmp://${config.rtmpHost}:${config.rtmpPort}/live` });

  const plugin = webhookRoutes({
    endpoints,
    deliveries,
    dispatcher,
    guard: deps.guard,
    samples,
    waitMs: config.webhookTimeoutMs + 2000,
  });

  return {
    endpoints,
    deliveries,
    /** How outbox payloads and delivery bodies are stored (tools and tests read them through it). */
    events,
    dispatcher,
    listen,
    plugins: [listenRoutes({ hub: listen, database: deps.database, samples, outbox: deps.outbox }), plugin],
    start: () => dispatcher.start(),
    stop: async () => {
      await listen.stop();
      await dispatcher.stop();
    },
  };
}

export type WebhookModule = ReturnType<typeof createWebhookModule>;
