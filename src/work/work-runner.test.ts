import { until } from "../../test/support/events.ts";
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "../db/create-database.ts";
import { silentLogger } from "../log.ts";
import { InfrastructureError } from "../infrastructure-failure.ts";
import { work } from "../db/schema/index.ts";
import { eq } from "drizzle-orm";
import { type FixtureWork, fixtureWork } from "./work-fixture.ts";
import { createWorkLedger, type EnqueueInput, type WorkLedger, type WorkRow as AnyWorkRow } from "./work-ledger.ts";
import type { WorkPolicies, WorkPolicy } from "./work-policies.ts";
import { createWorkRunner, PermanentWorkError, type WorkHandler as AnyWorkHandler, type WorkHandlers, type WorkRunner } from "./work-runner.ts";
import type { WorkType } from "./work-types.ts";

// This folder's tests run a payload map of their own (work-fixture.ts).
type WorkRow<T extends WorkType<FixtureWork> = WorkType<FixtureWork>> = AnyWorkRow<FixtureWork, T>;
type WorkHandler<T extends WorkType<FixtureWork>> = AnyWorkHandler<FixtureWork, T>;
type Input = EnqueueInput<FixtureWork>;

/** A runner on a real database file, with short leases and polls, and the handlers and policies each test gives. */

const LEASE = 300;
let dir: string | undefined;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

interface Harness {
  database: Database;
  ledger: WorkLedger<FixtureWork>;
  runner: WorkRunner;
  /** Enqueues with the type's policy; `maxAttempts` sets that policy's attempts first (as a declaration would). */
  enqueue(input: Partial<Input> & Pick<Input, "type" | "payload"> & { maxAttempts?: number }): Promise<string>;
}

async function harness(handlers: Partial<WorkHandlers<FixtureWork>>, policies: Partial<WorkPolicies<FixtureWork>> = {}, runnerOpts: { infraRetryWindowMs?: number } = {}): Promise<Harness> {
  dir = mkdtempSync(join(tmpdir(), "runner-"));
  const database = await createDatabase({ url: `file:${join(dir, "t.db")}` });
  const registry = fixtureWork();
  const allPolicies = Object.assign(registry.policies, policies);
  const ledger = createWorkLedger({ database, holder: "runner_test", leaseMs: LEASE, work: registry });
  const noop = { run: async () => undefined };
  const all = {
    "fetch-source": noop,
    transcode: noop,
    "live-watch": noop,
    retention: noop,
    ...handlers,
  } as WorkHandlers<FixtureWork>;
  const runner = createWorkRunner({ ledger, handlers: all, logger: silentLogger, pollMs: 20, ...runnerOpts });
  cleanups.push(async () => {
    await runner.stop();
    database.close();
  });
  runner.start();
  return {
    database,
    ledger,
    runner,
    async enqueue({ maxAttempts, ...input }) {
      if (maxAttempts !== undefined) allPolicies[input.type] = { ...allPolicies[input.type], maxAttempts };
      const id = await database.write((tx) => ledger.enqueue(tx, { orgId: "org_a", entityId: "ent_1", ...input } as Input));
      runner.wake();
      return id;
    },
  };
}

const policy = (over: Partial<WorkPolicy>): WorkPolicy => ({ maxAttempts: 3, backoffMs: () => 10, concurrency: 2, timeoutMs: 5_000, ...over });

const settled = (h: Harness, id: string) =>
  until(
    () => h.ledger.get(id),
    (r) => r !== null && !["queued", "running"].includes(r.status),
  );

/** A handler that runs until its signal is aborted, then throws the abort's reason. */
function untilAborted(seen: { reason?: unknown; started: number }): WorkHandler<"live-watch"> {
  return {
    run: (_row, { signal }) => {
      seen.started++;
      return new Promise((_, reject) => {
        signal.addEventListener("abort", () => {
          seen.reason = signal.reason;
          reject(signal.reason);
        });
      });
    },
  };
}

describe("retries and failures", () => {
  test("a failing run is retried after the policy's backoff, then fails for good and calls onFailed once", async () => {
    const attempts: number[] = [];
    const backoffAsked: number[] = [];
    const failed: Array<{ row: WorkRow; err: unknown }> = [];
    const h = await harness(
      {
        "live-watch": {
          run: async (row) => {
            attempts.push(row.attempts);
            throw new Error(`boom ${row.attempts}`);
          },
          onFailed: async (_tx, row, err) => {
            failed.push({ row, err });
          },
        },
      },
      {
        "live-watch": policy({
          maxAttempts: 3,
          backoffMs: (a) => {
            backoffAsked.push(a);
            return 30;
          },
        }),
      },
    );
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" } });
    const row = await settled(h, id);
    expect(row).toMatchObject({ status: "failed", attempts: 3, lastError: "boom 3", leaseUntil: null });
    expect(attempts).toEqual([1, 2, 3]);
    expect(backoffAsked).toEqual([1, 2]);
    // Once, and not again later.
    await Bun.sleep(100);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.row.id).toBe(id);
    expect((failed[0]!.err as Error).message).toBe("boom 3");
  });

  test("a PermanentWorkError fails at once", async () => {
    let runs = 0;
    const failed: unknown[] = [];
    const h = await harness({
      "live-watch": {
        run: async () => {
          runs++;
          throw new PermanentWorkError("SOURCE_NOT_FOUND", "gone");
        },
        onFailed: async (_tx, _row, err) => {
          failed.push(err);
        },
      },
    });
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" }, maxAttempts: 5 });
    expect(await settled(h, id)).toMatchObject({ status: "failed", attempts: 1, lastError: "gone" });
    await Bun.sleep(50);
    expect(runs).toBe(1);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toBeInstanceOf(PermanentWorkError);
  });
});

describe("a failure and what it tells commit together (issue 24)", () => {
  test("onFailed runs in the transaction that fails the row: when it cannot write, the row is not failed and runs again", async () => {
    let runs = 0;
    let tells = 0;
    const h = await harness({
      "live-watch": {
        run: async () => {
          runs++;
          throw new PermanentWorkError("SOURCE_NOT_FOUND", "gone");
        },
        // What it tells (here: a row enqueued in its transaction) cannot be written the first time (a database error).
        onFailed: async (tx, row) => {
          tells++;
          await h.ledger.enqueue(tx, { type: "retention", payload: {}, orgId: row.orgId, entityId: "told", runAfter: Date.now() + 3_600_000 });
          if (tells === 1) throw new Error("database error while telling the actor");
        },
      },
    });
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" }, maxAttempts: 5 });
    // Before: the row was failed first, then the handler told (or, on an error or a crash, did not): failed and nobody told.
    const row = await settled(h, id);
    expect(row).toMatchObject({ status: "failed", lastError: "gone" });
    expect(runs).toBe(2);
    expect(tells).toBe(2);
    const told = await h.database.db.select().from(work).where(eq(work.entityId, "told"));
    expect(told).toHaveLength(1);
  }, 20_000);
});

describe("failures of our own infrastructure (issue 24)", () => {
  const unavailable = () => Object.assign(new Error("an unexpected error has occurred"), { name: "S3Error", code: "ConnectionRefused" });

  test("are retried without spending an attempt while the window lasts, and the work then completes", async () => {
    const seen: number[] = [];
    const h = await harness(
      {
        "live-watch": {
          run: async (row) => {
            seen.push(row.attempts);
            if (seen.length === 1) throw unavailable();
            if (seen.length === 2) throw new InfrastructureError("database away");
          },
        },
      },
      {},
      { infraRetryWindowMs: 60_000 },
    );
    // One attempt only: before, the first outage failed it for good.
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" }, maxAttempts: 1 });
    const row = await settled(h, id);
    expect(row).toMatchObject({ status: "done", attempts: 1 });
    expect(seen).toEqual([1, 1, 1]);
  }, 20_000);

  test("keep the window's start across retries (in last_error) and count as attempts once it has passed", async () => {
    let runs = 0;
    const failed: unknown[] = [];
    const h = await harness(
      {
        "live-watch": {
          run: async () => {
            runs++;
            throw unavailable();
          },
          onFailed: async (_tx, _row, err) => {
            failed.push(err);
          },
        },
      },
      {},
      { infraRetryWindowMs: 1_500 },
    );
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" }, maxAttempts: 1 });
    const row = await settled(h, id);
    expect(row).toMatchObject({ status: "failed", attempts: 1 });
    // 1 s apart: at 0 and ~1 s inside the window, the third past it fails for good.
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(runs).toBeLessThanOrEqual(3);
    expect(failed).toHaveLength(1);
  }, 20_000);

  test("a failure of the media itself still spends attempts", async () => {
    let runs = 0;
    const h = await harness(
      {
        "live-watch": {
          run: async () => {
            runs++;
            throw Object.assign(new Error("ffmpeg failed (exit 1): Invalid data found when processing input"), { code: "FFMPEG_FAILED" });
          },
        },
      },
      { "live-watch": policy({ maxAttempts: 2 }) },
    );
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" }, maxAttempts: 2 });
    expect(await settled(h, id)).toMatchObject({ status: "failed", attempts: 2 });
    expect(runs).toBe(2);
  });
});

describe("results", () => {
  test("{ defer } queues the row again without spending an attempt", async () => {
    const seen: number[] = [];
    const h = await harness({
      "live-watch": {
        run: async (row) => {
          seen.push(row.attempts);
          return seen.length < 3 ? { defer: 20 } : undefined;
        },
      },
    });
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" }, maxAttempts: 1 });
    expect(await settled(h, id)).toMatchObject({ status: "done", attempts: 1 });
    // Three runs on a single attempt: a deferral is not a failure.
    expect(seen).toEqual([1, 1, 1]);
  });

  test("{ next } advances the same row to another type with fresh attempts", async () => {
    const transcoded: WorkRow<"transcode">[] = [];
    const h = await harness(
      {
        "fetch-source": { run: async () => ({ next: { type: "transcode", payload: { sourcePath: "/tmp/x.mp4", fetched: true } } }) },
        transcode: {
          run: async (row) => {
            transcoded.push(row);
          },
        },
      },
      { transcode: policy({ maxAttempts: 7 }) },
    );
    const id = await h.enqueue({ type: "fetch-source", payload: {}, maxAttempts: 2 });
    const done = await settled(h, id);
    expect(done).toMatchObject({ id, type: "transcode", status: "done", attempts: 1, maxAttempts: 7, payload: { sourcePath: "/tmp/x.mp4", fetched: true } });
    expect(transcoded).toHaveLength(1);
    expect(transcoded[0]).toMatchObject({ id, type: "transcode", attempts: 1 });
  });
});

describe("aborts", () => {
  test("a run over its policy's timeout is aborted (and counts as a failed attempt)", async () => {
    const seen = { started: 0 } as { reason?: unknown; started: number };
    const h = await harness({ "live-watch": untilAborted(seen) }, { "live-watch": policy({ maxAttempts: 1, timeoutMs: 50 }) });
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" }, maxAttempts: 1 });
    const row = await settled(h, id);
    expect(row).toMatchObject({ status: "failed", attempts: 1 });
    expect(row!.lastError).toContain("longer than 50 ms");
    expect(seen.started).toBe(1);
    expect(seen.reason).toBeInstanceOf(Error);
  });

  test("a timeout past setTimeout's 32-bit limit (TRANSCODE_TIMEOUT_MS of 30 days) does not abort the run at once", async () => {
    let aborted = false;
    let finish: (() => void) | undefined;
    const h = await harness(
      {
        "live-watch": {
          run: (_row, { signal }) =>
            new Promise<void>((resolve) => {
              signal.addEventListener("abort", () => {
                aborted = true;
              });
              finish = resolve;
            }),
        },
      },
      { "live-watch": policy({ timeoutMs: 30 * 24 * 60 * 60_000 }) },
    );
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" } });
    await until(
      async () => finish,
      (f) => f !== undefined,
    );
    await Bun.sleep(50);
    expect(aborted).toBe(false);
    finish!();
    expect(await settled(h, id)).toMatchObject({ status: "done", attempts: 1 });
  });

  test("a lease lost to cancelForEntity aborts the running handler, which is not retried", async () => {
    const seen = { started: 0 } as { reason?: unknown; started: number };
    let failed = 0;
    const h = await harness({
      "live-watch": {
        ...untilAborted(seen),
        onFailed: async () => {
          failed++;
        },
      },
    });
    const id = await h.enqueue({ type: "live-watch", payload: { streamId: "ls_1" }, entityId: "ls_1" });
    await until(
      () => h.ledger.get(id),
      (r) => r?.status === "running" && seen.started === 1,
    );
    // Cancelled in the database (e.g. by a DELETE in another process): not through the runner.
    expect(await h.database.write((tx) => h.ledger.cancelForEntity(tx, "ls_1"))).toBe(1);
    // The renewal finds the lease gone (within a third of it) and aborts the run.
    await until(
      async () => seen.reason,
      (r) => r !== undefined,
    );
    expect(seen.reason).toBeInstanceOf(PermanentWorkError);
    expect((seen.reason as PermanentWorkError).code).toBe("CANCELLED");
    await until(
      async () => h.runner.runningCount(),
      (n) => n === 0,
    );
    expect(await h.ledger.get(id)).toMatchObject({ status: "cancelled", attempts: 1 });
    await Bun.sleep(LEASE);
    expect(seen.started).toBe(1);
    expect(failed).toBe(0);
  });
});
