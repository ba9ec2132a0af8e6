import { assign, emit, setup } from "xstate";
import { loadConfig } from "../../src/config.ts";
import { type ActorKinds, type ActorRuntime, createActorRuntime } from "../../src/actors/actor-runtime.ts";
import type { Database } from "../../src/db/create-database.ts";
import { silentLogger } from "../../src/log.ts";
import { type ServiceWork, serviceWork } from "../../src/service-work.ts";
import { createWorkLedger, type WorkLedger } from "../../src/work/work-ledger.ts";

/**
 * A counting machine run by the real actor runtime, for write-path tests:
 * every INC is one transition that bumps `n` and emits a COUNTED domain
 * event carrying the new `n`. A lost transition leaves a gap in the events'
 * `n`s and a doubled one repeats a value, so the outbox proves exactly once.
 */
export const counterMachine = setup({
  types: { context: {} as { id: string; orgId: string; n: number }, input: {} as { id: string; orgId: string }, events: {} as { type: "INC" } },
}).createMachine({
  id: "counter",
  context: ({ input }) => ({ ...input, n: 0 }),
  initial: "counting",
  states: {
    counting: {
      on: {
        INC: {
          actions: [assign({ n: ({ context }) => context.n + 1 }), emit(({ context }) => ({ type: "domain", event: "COUNTED", data: { n: context.n } }) as never)],
        },
      },
    },
  },
});

/** The runtime with the counter registered under the `video` kind name (the runtime stores any machine; the name is only a column). */
export function counterRuntime(database: Database, holder: string): { runtime: ActorRuntime; ledger: WorkLedger<ServiceWork> } {
  const ledger = createWorkLedger({ database, holder, leaseMs: 60_000, work: serviceWork(loadConfig({})) });
  const counter = { machine: counterMachine, version: 1, statusOf: () => "COUNTING" };
  const kinds = { video: counter, livestream: counter } as unknown as ActorKinds;
  const runtime = createActorRuntime({ database, logger: silentLogger, kinds, ledger });
  return { runtime, ledger };
}

export const inc = (runtime: ActorRuntime, id: string) => runtime.send("video", id, { type: "INC" } as never);
export const createCounter = (runtime: ActorRuntime, id: string, orgId: string) => runtime.create("video", { id, orgId } as never);
