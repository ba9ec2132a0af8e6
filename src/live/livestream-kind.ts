import { LIVESTREAM_MACHINE_VERSION, livestreamMachine, migrateStream, streamDelays, streamStatus, type StreamTimings } from "../../machines/livestream-machine.ts";
import type { ActorKindSpec, TagCounts } from "../actors/actor-kind-spec.ts";
import type { SecretGroup } from "../actors/context-secrets.ts";
import type { Logger } from "../log.ts";
import { NoSlotsAvailable } from "./errors.ts";

export interface SlotLimits {
  /** LIVE_SLOTS: the whole pool. */
  pool: () => number;
  /** LIVE_SLOTS_PER_ORG: what one organization may hold at once. */
  perOrg: () => number;
}

/**
 * Called inside the write transaction that just put `orgId`'s stream into a
 * `holdsSlot` state (so the counts include it): refuses when the organization
 * or the pool is over its limit, rolling the transition back.
 */
async function checkSlots(counts: TagCounts<"livestream">, slots: SlotLimits, logger: Logger, orgId: string, streamId: string): Promise<void> {
  const org = await counts.count("holdsSlot", orgId);
  if (org > slots.perOrg()) {
    logger.warn("Live slot refused: organization at its limit", { org_id: orgId, stream_id: streamId, held: org - 1, limit: slots.perOrg() });
    throw new NoSlotsAvailable("organization");
  }
  const pool = await counts.count("holdsSlot");
  if (pool > slots.pool()) {
    logger.warn("Live slot refused: pool exhausted", { org_id: orgId, stream_id: streamId, held: pool - 1, limit: slots.pool() });
    throw new NoSlotsAvailable("pool");
  }
}

/**
 * A stream's secrets at rest: the key and the push URL that embeds it leave the stored context; `sealed` holds both
 * (src/actors/context-secrets.ts; the stored form every version since issue 9 wrote).
 */
export const STREAM_SECRETS: readonly SecretGroup[] = [{ at: [], fields: ["streamKey", "rtmpUrl"], sealedAs: "sealed" }];

/**
 * The live stream actor kind: its machine with the configured timers, its
 * stored version and migration, secrets sealed at rest, and the slot limits
 * checked in the transaction of every transition that takes a slot (a
 * creation, or a booking's timer; a booking refused there fails with
 * NO_SLOTS_AVAILABLE instead).
 */
export function livestreamKind(opts: { timings: StreamTimings; slots: SlotLimits; logger: Logger }): ActorKindSpec<"livestream"> {
  return {
    machine: livestreamMachine.provide({ delays: streamDelays(opts.timings) }) as typeof livestreamMachine,
    version: LIVESTREAM_MACHINE_VERSION,
    migrate: migrateStream,
    statusOf: streamStatus,
    secrets: STREAM_SECRETS,
    async check(change, counts) {
      if (change.entered("holdsSlot")) await checkSlots(counts, opts.slots, opts.logger, change.orgId, change.id);
    },
    refused(err) {
      if (!(err instanceof NoSlotsAvailable)) return null;
      return { type: "FAIL", at: new Date().toISOString(), error: { code: err.code, message: "No live stream slot was free at the booked time." } };
    },
  };
}
