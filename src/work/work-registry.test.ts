import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { until } from "../../test/support/events.ts";
import { createDatabase } from "../db/create-database.ts";
import { silentLogger } from "../log.ts";
import { defineWork } from "./work-declaration.ts";
import { createWorkLedger } from "./work-ledger.ts";
import type { WorkPolicy } from "./work-policies.ts";
import { assembleWork } from "./work-registry.ts";
import { createWorkRunner, type WorkHandlers } from "./work-runner.ts";

/** Modules declared only here: the ledger and the runner run them by their own declarations. */
interface ThingWork {
  "thing-poke": { thingId: string };
}
interface OtherWork {
  "other-tick": Record<string, never>;
}

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const quiet = (over: Partial<WorkPolicy>): WorkPolicy => ({ maxAttempts: 10, backoffMs: () => 10, concurrency: 1, timeoutMs: 5_000, ...over });

test("a module's work runs by the policy it declares (attempts, backoff): the ledger copies its attempts, no call site does", async () => {
  const backoffAsked: number[] = [];
  const things = defineWork<ThingWork>("things", {
    "thing-poke": quiet({
      maxAttempts: 2,
      backoffMs: (attempt) => {
        backoffAsked.push(attempt);
        return 20;
      },
    }),
  });
  const others = defineWork<OtherWork>("others", { "other-tick": quiet({ maxAttempts: 7 }) });
  const registry = assembleWork(things, others);
  expect(registry.owner).toEqual({ "thing-poke": "things", "other-tick": "others" });

  dir = mkdtempSync(join(tmpdir(), "registry-"));
  const database = await createDatabase({ url: `file:${join(dir, "t.db")}` });
  const ledger = createWorkLedger({ database, holder: "registry_test", leaseMs: 300, work: registry });
  const poked: Array<{ thingId: string; attempt: number }> = [];
  const handlers: WorkHandlers<ThingWork & OtherWork> = {
    "thing-poke": {
      run: async (row) => {
        poked.push({ thingId: row.payload.thingId, attempt: row.attempts });
        throw new Error("not yet");
      },
    },
    "other-tick": { run: async () => undefined },
  };
  const runner = createWorkRunner({ ledger, handlers, logger: silentLogger, pollMs: 20 });
  runner.start();
  try {
    const id = await database.write((tx) => ledger.enqueue(tx, { type: "thing-poke", payload: { thingId: "th_1" }, orgId: "org_a", entityId: "th_1" }));
    const tick = await database.write((tx) => ledger.enqueue(tx, { type: "other-tick", payload: {}, orgId: "org_a", entityId: "x" }));
    runner.wake();
    const failed = await until(
      () => ledger.get(id),
      (r) => r?.status === "failed",
    );
    expect(failed).toMatchObject({ type: "thing-poke", attempts: 2, maxAttempts: 2 });
    expect(poked).toEqual([
      { thingId: "th_1", attempt: 1 },
      { thingId: "th_1", attempt: 2 },
    ]);
    expect(backoffAsked).toEqual([1]);
    const done = await until(
      () => ledger.get(tick),
      (r) => r?.status === "done",
    );
    expect(done).toMatchObject({ maxAttempts: 7 });
  } finally {
    await runner.stop();
    database.close();
  }
});

test("two modules declaring the same type are refused at assembly", () => {
  const a = defineWork<ThingWork>("things", { "thing-poke": quiet({}) });
  const b = defineWork<ThingWork>("copycat", { "thing-poke": quiet({}) });
  expect(() => assembleWork(a, b)).toThrow('Work type "thing-poke" is declared by both "things" and "copycat".');
});
