import { VIDEO_MACHINE_VERSION, videoMachine, videoStatus } from "../machines/video-machine.ts";
import type { ActorKindSpec, ActorKinds } from "./actors/actor-runtime.ts";
import type { Config } from "./config.ts";
import { livestreamKind } from "./live/livestream-kind.ts";
import type { Logger } from "./log.ts";
import type { createActorSealers } from "./secrets/actor-secrets.ts";

/** The service's actor kinds from its configuration: the videos', and the live streams' with their timers and slot limits. */
export function actorKinds(config: Config, sealers: ReturnType<typeof createActorSealers>, logger: Logger): ActorKinds {
  return {
    video: { machine: videoMachine, version: VIDEO_MACHINE_VERSION, statusOf: videoStatus, ...(sealers.video as Pick<ActorKindSpec<"video">, "seal" | "open">) },
    livestream: livestreamKind({
      timings: { leadMs: config.liveScheduleLeadMs, idleMs: config.liveIdleTimeoutMs, reconnectMs: config.liveReconnectMs },
      slots: { pool: () => config.liveSlots, perOrg: () => config.liveSlotsPerOrg },
      logger: logger.child({ component: "live" }),
      sealers: sealers.livestream as never,
    }),
  };
}
