import { actorWork } from "./actors/actor-work.ts";
import type { Config } from "./config.ts";
import { liveWork } from "./live/live-work.ts";
import { retentionWork } from "./retention/retention-work.ts";
import { videoWork } from "./videos/video-work.ts";
import { assembleWork, type WorkRegistry } from "./work/work-registry.ts";

/**
 * The service's work: each module's declaration (its types with their
 * payloads and policies), assembled into the one registry the ledger and the
 * runner run by. A type declared by two modules is refused here, at start-up.
 * Add a module's work: one entry below, its handlers in service.ts's runner.
 */
export function serviceWork(config: Config) {
  return assembleWork(videoWork(config), liveWork, actorWork, retentionWork);
}

/** Every work type of the service with its payload. */
export type ServiceWork = ReturnType<typeof serviceWork> extends WorkRegistry<infer P> ? P : never;
