import type { ActorKinds } from "./actors/actor-kind-spec.ts";
import type { Config } from "./config.ts";
import { livestreamKind } from "./live/livestream-kind.ts";
import type { Logger } from "./log.ts";
import { videoKind } from "./videos/video-kind.ts";

/** The service's actor kinds from its configuration: the videos', and the live streams' with their timers and slot limits. */
export function actorKinds(config: Config, logger: Logger): ActorKinds {
  return {
    video: videoKind,
    livestream: livestreamKind({
      timings: { leadMs: config.liveScheduleLeadMs, idleMs: config.liveIdleTimeoutMs, reconnectMs: config.liveReconnectMs },
      slots: { pool: () => config.liveSlots, perOrg: () => config.liveSlotsPerOrg },
      logger: logger.child({ component: "live" }),
    }),
  };
}
