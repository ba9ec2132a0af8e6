import { accessSync, constants } from "node:fs";
import { hostname } from "node:os";
import { actorKinds } from "./actor-kinds-config.ts";
import { createActorRuntime, type ActorRuntime } from "./actors/actor-runtime.ts";
import { actorWorkHandlers } from "./actors/actor-work.ts";
import { serviceWork, type ServiceWork } from "./service-work.ts";
import { randomToken } from "./ids.ts";
import { createLiveUrls } from "./live/live-urls.ts";
import { createRetention } from "./retention/retention.ts";
import { retentionHandlers, scheduleRetention } from "./retention/retention-handler.ts";
import { createWorkLedger, type WorkLedger } from "./work/work-ledger.ts";
import type { WorkPolicies } from "./work/work-policies.ts";
import { createWorkRunner, type WorkRunner } from "./work/work-runner.ts";
import { type Config, printableDatabaseUrl } from "./config.ts";
import { createDatabase, ensurePrivateDir, type Database } from "./db/create-database.ts";
import { createApp, type App } from "./http/create-app.ts";
import { canonicalRequest } from "./http/canonical-request.ts";
import { withRequestDeadline } from "./http/request-deadline.ts";
import { createRateLimiter, type RateLimiter } from "./http/rate-limiter.ts";
import { serverMaxBodyBytes } from "./http/route-limits.ts";
import { createLogger, type Logger } from "./log.ts";
import { createOrgStore, type OrgStore } from "./orgs/org-store.ts";
import { organizationRoutes } from "./routes/organization-routes.ts";
import { loadServerSecret, type ServerSecret } from "./secrets/server-secret.ts";
import { createEventSealer } from "./secrets/event-sealer.ts";
import { createSecretCipher } from "./secrets/secret-cipher.ts";
import { createOutbox, type Outbox } from "./outbox/outbox.ts";
import { createMediaStore, type MediaStore } from "./storage/media-store.ts";
import { createObjectStore } from "./storage/create-object-store.ts";
import type { ObjectStore } from "./storage/object-store.ts";
import { mediaRoutes } from "./storage/media-routes.ts";
import { createPlaybackModule, type PlaybackModule } from "./playback/playback-module.ts";
import { staticAssets } from "./http/static-assets.ts";
import { settingsRoutes } from "./settings/settings-module.ts";
import { peopleFor } from "./people/people-store.ts";
import { createVideoModule, type VideoModule } from "./videos/video-module.ts";
import { createTranscoder } from "../media/transcoder/index.ts";
import { createTranscriber, sttUnavailableReason } from "../media/stt/index.ts";
import { webrtcAvailability } from "./webrtc/availability.ts";
import { createWebrtcModule, type WebrtcModule } from "./webrtc/webrtc-module.ts";
import { webrtcRoutes } from "./webrtc/webrtc-routes.ts";
import type { Transcriber } from "../media/stt/types.ts";
import { createLiveModule, type LiveModule } from "./live/live-module.ts";
import { createOutboundGuard, type OutboundGuard } from "./net/outbound-guard.ts";
import { subscribedEvents } from "./webhooks/subscribed-events.ts";
import { createWebhookModule, type WebhookModule } from "./webhooks/webhook-module.ts";
import { webhookEventsDoc } from "./webhooks/event-schemas.ts";
import { createOps } from "./ops/create-ops.ts";
import { createImageModule, type ImageModule } from "./images/image-module.ts";
import { startupStep } from "./startup-errors.ts";
import { type BoundAddress, createBoundAddress, frozenConfig } from "./bound-address.ts";
import { answerBeaconsFirst } from "./analytics/beacon-fast-path.ts";
import { createAnalyticsModule, type AnalyticsModule } from "./analytics/analytics-module.ts";

export interface Service {
  /** Frozen before any module is built (issue 25); its baseUrl and ports read `address`. */
  config: Readonly<Config>;
  /** Where this process is reached once it listens: the public origin and the bound ports (src/bound-address.ts). */
  address: BoundAddress;
  logger: Logger;
  database: Database;
  orgs: OrgStore;
  rateLimiter: RateLimiter;
  runtime: ActorRuntime;
  /** Domain events as written by the actors, for the webhooks and tools (src/outbox). */
  outbox: Outbox;
  /** The work ledger and the runner of every type of work (src/work/). */
  ledger: WorkLedger<ServiceWork>;
  runner: WorkRunner;
  /** Every work type's policy (concurrency, attempts, backoff, timeout) as the modules declared it, read by the runner at each claim. */
  policies: WorkPolicies<ServiceWork>;
  secret: ServerSecret;
  outbound: OutboundGuard;
  store: MediaStore;
  /** Where durable files live (STORAGE: DATA_DIR or an S3 bucket); keys as in src/storage/object-store.ts. */
  objects: ObjectStore;
  videos: VideoModule;
  live: LiveModule;
  /** WHIP ingest and WHEP playback (issue 14); its media server starts on the first session. */
  rtc: WebrtcModule;
  webhooks: WebhookModule;
  /** Signed playback and playback restrictions (issue 27). */
  playback: PlaybackModule;
  /** Viewer analytics (issue 28): beacons, per-view figures, rollups, the read API. */
  analytics: AnalyticsModule;
  /** Images by URL (issue 27): `GET /image/{id}/thumbnail.*`, `animated.*`. */
  images: ImageModule;
  app: App;
  /** Starts background work (flushers, dispatchers, ingest) and the HTTP listener. */
  listen(): Promise<{ port: number }>;
  stop(): Promise<void>;
}

/**
 * Wires the whole service from a config. `main.ts` calls it for real; tests call
 * it with a temporary DATA_DIR and a random port, so they run the real thing.
 */
export async function createService(
  loaded: Config,
  opts: { logger?: Logger /** Tests: a given engine, or null for none (default: made from config). */; transcriber?: Transcriber | null } = {},
): Promise<Service> {
  // Frozen before the modules are built: nothing writes BASE_URL or a port afterwards; bound ports are read from the listeners.
  const address = createBoundAddress(loaded);
  const config = frozenConfig(loaded, address);
  const logger = opts.logger ?? createLogger({ level: config.logLevel === "silent" ? "silent" : config.logLevel });
  // A DATA_DIR or DATABASE_URL the process cannot use is one `configuration:` line (src/startup-errors.ts), not a stack.
  await startupStep(`DATA_DIR ${config.dataDir} cannot be used`, () => {
    ensurePrivateDir(config.dataDir); // 0700: database, media, uploads, the key file
    accessSync(config.dataDir, constants.W_OK | constants.X_OK);
  });
  const database = await startupStep(`DATABASE_URL ${printableDatabaseUrl(config.databaseUrl)} cannot be opened`, () =>
    createDatabase({ url: config.databaseUrl, authToken: config.databaseAuthToken, timeoutMs: config.databaseTimeoutMs }),
  );
  const orgs = createOrgStore(database);
  // RATE_LIMIT_STORE: `database` (default on a libSQL server) is exact across processes; `memory` for a `file:` database.
  const rateLimiter = createRateLimiter({ database, logger, windowMs: config.rateLimitWindowMs, store: config.rateLimitStore });
  await rateLimiter.load();
  const secret = await startupStep(`the key file in DATA_DIR ${config.dataDir} cannot be used`, () => loadServerSecret(config.dataDir, config.secretKey));
  // Event payloads carry push credentials and passwords (the spec delivers them): stored sealed.
  const outbox = createOutbox({ database, events: createEventSealer(secret) });
  // One holder id per process start: leases of a previous run of this process (same host and pid) are not ours.
  const holder = `${hostname()}-${process.pid}-${randomToken(4)}`;
  // Every module's work, declared by the module (types, policies) and assembled here; the handlers join at the runner.
  const registry = serviceWork(config);
  const ledger = createWorkLedger({ database, holder, leaseMs: config.jobLeaseMs, work: registry });
  const { policies } = registry;
  const urls = createLiveUrls(config, secret);
  const runtime = createActorRuntime({
    database,
    logger,
    ledger,
    kinds: actorKinds(config, logger),
    subscribedEvents,
    outbox,
    // The kinds' declared secret fields (stream keys, download passwords) are stored sealed (src/actors/context-secrets.ts).
    secrets: createSecretCipher(secret.derive("actor-context")),
  });
  // Created once every module has registered its handlers; modules reach it through these two calls.
  let runner: WorkRunner | undefined;
  const work = { wake: () => runner?.wake(), cancelEntity: (id: string) => runner?.cancelEntity(id) ?? false };
  const objects = createObjectStore(config);
  // Operations (issue 16, src/ops): this instance's metrics registry, /healthz /readyz /metrics, the access log.
  const ops = createOps({
    config,
    database,
    objects,
    logger,
    workTypes: registry.types,
    rtmpPort: () => live.rtmp?.port ?? null,
    broadcasts: () => live.ingest.held().length,
  });
  const store = createMediaStore({ dataDir: config.dataDir, baseUrl: () => config.baseUrl, secret, objects });
  // One guard for every outbound request (webhooks, source fetches): SSRF refusal after DNS.
  const outbound = createOutboundGuard({ allowPrivate: config.allowPrivateNetwork });
  // Speech-to-text (issue 12), made once: whisper with STT_MODEL_PATH, else pocketsphinx if installed, else none.
  const transcriber = opts.transcriber !== undefined ? opts.transcriber : await createTranscriber({ modelPath: config.sttModelPath, logger: logger.child({ component: "stt" }) });
  const unavailableReason = transcriber ? "" : sttUnavailableReason();
  if (transcriber) logger.info("Transcripts available", { engine: transcriber.name });
  else logger.warn(`Transcripts unavailable: ${unavailableReason}`);
  // WebRTC (issue 14): the mediasoup worker is built by `npm run setup:webrtc`, never by npm install.
  const webrtc = webrtcAvailability();
  if (webrtc.available) logger.info("WebRTC available", { worker_bin: webrtc.workerBin });
  else logger.warn(`WebRTC unavailable: ${webrtc.reason}; run npm run setup:webrtc`);
  // Signed playback and playback restrictions (issue 27, src/playback): the gate of every media route.
  const playback = createPlaybackModule({ database });
  const videos = createVideoModule({
    playback: playback.assets,
    gate: playback.gate,
    config,
    database,
    runtime,
    ledger,
    work,
    orgs,
    logger,
    secret,
    store,
    rateLimiter,
    transcripts: { transcriber, unavailableReason },
    guard: (url) => outbound.check(url),
    onTranscoded: (t) => ops.metrics.observeTranscode(t.backend, t.mediaSeconds, t.wallSeconds),
    // Created on first use: the wasm pool costs memory and start-up time that an idle API should not pay.
    createTranscoder: async ({ childPidDir }) =>
      createTranscoder({ backend: config.mediaBackend, workers: config.transcodeWorkers, childPidDir, logger: (o: Record<string, unknown>) => logger.debug("transcoder", o) }),
  });
  const live = createLiveModule({
    config,
    database,
    runtime,
    ledger,
    videos: videos.videos,
    urls,
    secret,
    logger,
    wakeWork: work.wake,
    objects,
    onPlaylistServed: ops.viewers.seen,
    playback: playback.assets,
    gate: playback.gate,
    outputs: { checkHost: (host) => outbound.checkHost(host), appendEvents: (tx, events) => outbox.append(tx, events), subscribedEvents },
  });
  address.attach({ rtmp: () => live.rtmp?.port, srt: () => live.srt.port });
  const rtc = createWebrtcModule({ config, availability: webrtc, live, logger });
  live.describeWebrtc(rtc.describe);
  ops.metrics.gauge({
    name: "vidlive_webrtc_viewers",
    help: "WHEP viewers connected to this process.",
    collect() {
      this.set(rtc.totals().viewers);
    },
  });
  ops.metrics.gauge({
    name: "vidlive_webrtc_publishers",
    help: "WHIP publishers connected to this process.",
    collect() {
      this.set(rtc.totals().publishers);
    },
  });
  ops.metrics.gauge({
    name: "vidlive_webrtc_routers",
    help: "mediasoup routers alive in this process's worker: the ingest router and one per stream and viewer payload-type mapping in use.",
    collect() {
      this.set(rtc.totals().routers);
    },
  });
  const analytics = createAnalyticsModule({ config, database, logger, rateLimiter, holder, keyOf: (kid, orgId) => playback.keys.verifierOf(kid, orgId), whepCounts: () => rtc.viewerCounts() });
  // Images by URL (issue 27, src/images): stored under the video's media tree, gated like every media route.
  const images = createImageModule({ config, runtime, objects, mediaToken: store.tokenFor, liveToken: live.urls.token, gate: playback.gate, logger });
  const retention = createRetention({ database, config, logger, removeMedia: (id) => store.remove(id), objects });
  runner = createWorkRunner({
    ledger,
    logger: logger.child({ component: "work" }),
    pollMs: Math.min(1000, Math.max(100, Math.floor(config.jobLeaseMs / 3))),
    infraRetryWindowMs: config.infraRetryWindowMs,
    onFinished: ops.metrics.observeJob,
    // Every declared type's handler, from the module that declares it (service-work.ts): a type without one does not compile.
    handlers: {
      ...videos.handlers,
      ...live.handlers,
      ...actorWorkHandlers(runtime),
      ...retentionHandlers({ retention, config }),
    },
  });
  runtime.onWork(() => work.wake());
  await runtime.sealStoredSecrets((tx, row) => live.keys.restoreIn(tx, row));
  const webhooks = createWebhookModule({ config, database, runtime, logger, secret, outbox, guard: outbound, tuning: { onAttempt: ops.metrics.observeWebhook } });
  const app = createApp({
    orgs,
    rateLimiter,
    logger,
    baseUrl: () => config.baseUrl,
    webhooks: webhookEventsDoc(),
    plugins: [
      organizationRoutes({ transcripts: () => videos.videos.transcriptEngine(), webrtc: () => rtc.available, srt: () => live.srt.available() }),
      ...videos.plugins,
      ...live.plugins,
      ...webhooks.plugins,
      ...playback.plugins,
      ...analytics.plugins,
    ],
    publicPlugins: [
      ops.plugin,
      staticAssets(),
      mediaRoutes(store, objects, playback.gate),
      ...videos.publicPlugins,
      ...live.publicPlugins,
      ...images.publicPlugins,
      webrtcRoutes({ webrtc: rtc, baseUrl: () => config.baseUrl, logger, trustProxy: config.trustProxy, gate: playback.gate }),
      // The settings screen (issue 13): its own sessions, not API keys.
      ...analytics.publicPlugins,
      settingsRoutes({ config, address, logger, people: peopleFor(database), orgs, rateLimiter, runtime, videos, live, webhooks, playback, analytics }),
    ],
  });

  // Beacons skip the framework's routing (the intake's throughput, issue 28); still observed below.
  answerBeaconsFirst(app, analytics.intake, logger);
  // After every route is registered: request ids, the access log and HTTP metrics wrap the app's handle.
  ops.observe(app);

  let server: ReturnType<typeof Bun.serve> | undefined;
  const stoppers: Array<() => Promise<void> | void> = [];

  return {
    config,
    address,
    logger,
    database,
    orgs,
    rateLimiter,
    runtime,
    outbox,
    ledger,
    runner,
    policies,
    secret,
    outbound,
    store,
    objects,
    videos,
    live,
    rtc,
    webhooks,
    playback,
    analytics,
    images,
    app,
    async listen() {
      rateLimiter.start();
      stoppers.push(() => rateLimiter.stop());
      videos.start();
      stoppers.push(() => videos.stop());
      stoppers.push(() => images.stop());
      await database.write((tx) => scheduleRetention(tx, ledger));
      runner!.start();
      stoppers.push(() => runner!.stop());
      await webhooks.start();
      stoppers.push(() => webhooks.stop());
      analytics.start();
      stoppers.push(() => analytics.stop());
      server = Bun.serve({
        port: config.port,
        hostname: config.hostname,
        // The largest legitimate body, a file upload (streamed to disk); every other route counts its own smaller limit while
        // reading (src/http/route-limits.ts BODY_LIMITS). Past this, Bun answers 413 itself, before any route.
        maxRequestBodySize: serverMaxBodyBytes(config.uploadMaxBytes),
        idleTimeout: 60,
        // Routing must not depend on the Host header (src/http/canonical-request.ts).
        // Every answer within REQUEST_TIMEOUT_MS: 503 + Retry-After rather than a hang (src/http/request-deadline.ts).
        fetch: withRequestDeadline((req) => app.handle(canonicalRequest(req)), config.requestTimeoutMs, logger),
      });
      // Elysia's context `server` (requestIP: live viewers, DRM licence limits) is set only by its own listen().
      app.server = server;
      // PORT=0 (tests, benches) picks a free port: public URLs name the real one, read from the listener (src/bound-address.ts).
      const bound = server;
      address.attach({ http: () => bound.port });
      logger.info("HTTP API listening", { port: server.port, base_url: address.baseUrl });
      // The live module's own player reads the stored live HLS (src/live/live-player.ts), not hls_url over HTTP.
      await live.start();
      stoppers.push(() => live.stop());
      // Before the live module (stoppers run in reverse): WHIP relays leave the RTMP server as publishers do.
      stoppers.push(() => rtc.stop());
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
      await database.close();
    },
  };
}
