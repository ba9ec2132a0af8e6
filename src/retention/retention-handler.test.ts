import { afterEach, beforeEach, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { work } from "../db/schema/index.ts";
import { silentLogger } from "../log.ts";
import { createWorkLedger } from "../work/work-ledger.ts";
import { assembleWork } from "../work/work-registry.ts";
import { createWorkRunner } from "../work/work-runner.ts";
import { createRetentionHandler, RETENTION_KEY, retentionHandlers, scheduleRetention } from "./retention-handler.ts";
import { retentionWork } from "./retention-work.ts";
import { createRetention } from "./retention.ts";
import { DAY, type Fixture, openFixture, rows } from "./retention-fixture.ts";

let fx: Fixture;
beforeEach(async () => {
  fx = await openFixture({ RETENTION_INTERVAL_MS: "600000" });
});
afterEach(() => fx.close());

// A ledger of this module's work alone, as its declaration gives it.
const ledgerOf = (holder: string) => createWorkLedger({ database: fx.database, holder, leaseMs: 30_000, work: assembleWork(retentionWork) });
const retentionRows = () => fx.database.db.select().from(work).where(eq(work.type, "retention"));

test("scheduling twice (two processes starting) leaves one open retention row", async () => {
  const a = ledgerOf("p1");
  const b = ledgerOf("p2");
  const first = await fx.database.write((tx) => scheduleRetention(tx, a));
  const second = await fx.database.write((tx) => scheduleRetention(tx, b));
  expect(second).toBe(first);
  const open = await retentionRows();
  expect(open.length).toBe(1);
  expect(open[0]).toMatchObject({ status: "queued", orgId: "", entityId: RETENTION_KEY, dedupeKey: RETENTION_KEY });
});

test("the runner sweeps, then the same row goes back to the queue for RETENTION_INTERVAL_MS without spending an attempt", async () => {
  const old = await rows(fx.database).work({ status: "done", finishedAt: Date.now() - 8 * DAY });
  const ledger = ledgerOf("p1");
  const retention = createRetention({ database: fx.database, config: fx.config, logger: silentLogger });
  const handlers = retentionHandlers({ retention, config: fx.config });
  const runner = createWorkRunner({ ledger, handlers, logger: silentLogger, pollMs: 20 });
  const id = await fx.database.write((tx) => scheduleRetention(tx, ledger));
  const before = Date.now();
  runner.start();
  try {
    for (let i = 0; i < 500; i++) {
      const row = await ledger.get(id);
      if (row?.status === "queued" && row.runAfter > before + 60_000) break;
      await Bun.sleep(10);
    }
  } finally {
    await runner.stop();
  }
  const row = await ledger.get(id);
  expect(row).toMatchObject({ status: "queued", attempts: 0, finishedAt: null });
  expect(row!.runAfter).toBeGreaterThanOrEqual(before + fx.config.retentionIntervalMs);
  expect(await ledger.get(old)).toBeNull();
  expect((await retentionRows()).length).toBe(1);
});

test("a sweep that fails is logged and deferred like any other, so retention never stops for good", async () => {
  const failing = { sweep: async () => Promise.reject(new Error("disk full")) };
  const errors: string[] = [];
  const logger = { ...silentLogger, error: (msg: string) => void errors.push(msg) };
  const handler = createRetentionHandler({ retention: failing, config: { retentionIntervalMs: 1234 } });
  const result = await handler.run({} as never, { signal: new AbortController().signal, logger });
  expect(result).toEqual({ defer: 1234 });
  expect(errors.length).toBe(1);
});

test("an aborted sweep (lease lost, shutdown) is left to the runner", async () => {
  const abort = new AbortController();
  abort.abort(new Error("shutdown"));
  const retention = createRetention({ database: fx.database, config: fx.config, logger: silentLogger });
  const handler = createRetentionHandler({ retention, config: fx.config });
  await expect(handler.run({} as never, { signal: abort.signal, logger: silentLogger })).rejects.toThrow("shutdown");
});
