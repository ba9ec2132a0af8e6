import { LIVESTREAM_MACHINE_VERSION, livestreamMachine, migrateStream, streamDelays, streamStatus, type StreamTimings } from "../../machines/livestream-machine.ts";
import type { StreamContext } from "../../machines/livestream-payload.ts";
import type { ActorKindSpec } from "../actors/actor-runtime.ts";
import { countTagged } from "../actors/actor-tags.ts";
import type { Tx } from "../db/create-database.ts";
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
async function checkSlots(tx: Tx, slots: SlotLimits, logger: Logger, orgId: string, streamId: string): Promise<void> {
  const org = await countTagged(tx, "livestream", "holdsSlot", orgId);
  if (org > slots.perOrg()) {
    logger.warn("Live slot refused: organization at its limit", { org_id: orgId, stream_id: streamId, held: org - 1, limit: slots.perOrg() });
    throw new NoSlotsAvailable("organization");
  }
  const pool = await countTagged(tx, "livestream", "holdsSlot");
  if (pool > slots.pool()) {
    logger.warn("Live slot refused: pool exhausted", { org_id: orgId, stream_id: streamId, held: pool - 1, limit: slots.pool() });
    throw new NoSlotsAvailable("pool");
  }
}

/**
 * The live stream actor kind: its machine with the configured timers, its
 * stored version and migration, secrets sealed at rest, and the slot limits
 * checked in the transaction of every transition that takes a slot (a
 * creation, or a booking's timer; a booking refused there fails with
 * NO_SLOTS_AVAILABLE instead).
 */
export function livestreamKind(opts: {
  timings: StreamTimings;
  slots: SlotLimits;
  logger: Logger;
  sealers: { seal?: (c: StreamContext, id: string) => unknown; open?: (stored: unknown, id: string) => StreamContext };
}): ActorKindSpec<"livestream"> {
  return {
    machine: livestreamMachine.provide({ delays: streamDelays(opts.timings) }) as typeof livestreamMachine,
    version: LIVESTREAM_MACHINE_VERSION,
    migrate: migrateStream,
    statusOf: streamStatus,
    ...opts.sealers,
    async check(tx, change) {
      if (change.entered("holdsSlot")) await checkSlots(tx, opts.slots, opts.logger, change.orgId, change.id);
    },
    refused(err) {
      if (!(err instanceof NoSlotsAvailable)) return null;
      return { type: "FAIL", at: new Date().toISOString(), error: { code: err.code, message: "No live stream slot was free at the booked time." } };
    },
  };
}
