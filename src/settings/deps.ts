import type { BoundAddress } from "../bound-address.ts";
import type { Config } from "../config.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { RateLimiter } from "../http/rate-limiter.ts";
import type { LiveModule } from "../live/live-module.ts";
import type { Logger } from "../log.ts";
import type { OrgStore } from "../orgs/org-store.ts";
import type { PeopleStore } from "../people/people-store.ts";
import type { PlaybackModule } from "../playback/playback-module.ts";
import type { VideoModule } from "../videos/video-module.ts";
import type { WebhookModule } from "../webhooks/webhook-module.ts";
import type { AnalyticsModule } from "../analytics/analytics-module.ts";

/** The configuration the screen reads (a frozen slice: the composition root passes the service's frozen config). */
export type SettingsConfig = Readonly<Pick<Config, "trustProxy" | "liveSlots" | "liveSlotsPerOrg" | "allowPrivateNetwork" | "webhookTimeoutMs" | "rtmpHost" | "smtpUrl" | "mailFrom">>;

/**
 * Everything the settings screen's pages may be given, each by name (issue
 * 25: no page sees the whole service, and this file imports no `service.ts`).
 * The same modules the REST routes use: the screen calls the domain services
 * directly, with the session's organization, never through an API key.
 */
export interface SettingsDeps {
  config: SettingsConfig;
  /** The public origin and the bound RTMP port (src/bound-address.ts), read when a page is rendered. */
  address: Pick<BoundAddress, "baseUrl" | "rtmpPort">;
  logger: Logger;
  /** Users, memberships, setup links, sessions (src/people). */
  people: PeopleStore;
  orgs: OrgStore;
  rateLimiter: Pick<RateLimiter, "hit">;
  /** Only the Organization page's usage counts (videos by status, slots held), through the runtime's look-ups. */
  runtime: Pick<ActorRuntime, "countByStatus" | "countTagged">;
  videos: VideoModule;
  live: LiveModule;
  webhooks: WebhookModule;
  playback: PlaybackModule;
  /** Issue 28: the analytics pages' reads. */
  analytics: AnalyticsModule;
}

/**
 * A page's dependencies: the ones it names, plus what its session guard
 * needs (`people`, `address`). A new page: `export function thingsPages(deps: PageDeps<"things" | "logger">)`.
 */
export type PageDeps<K extends keyof SettingsDeps> = Pick<SettingsDeps, K | "people" | "address">;
