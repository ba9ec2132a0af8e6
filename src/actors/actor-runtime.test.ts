import { until } from "../../test/support/events.ts";
import { afterEach, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { livestreamMachine, migrateStream, type StreamTimings, streamDelays, streamStatus } from "../../machines/livestream-machine.ts";
import type { RecordingInfo } from "../../machines/livestream-payload.ts";
import { streamInput, videoInput } from "../../machines/test-contexts.ts";
import { videoMachine, videoStatus } from "../../machines/video-machine.ts";
import { loadConfig } from "../config.ts";
import { createDatabase, type Database } from "../db/create-database.ts";
import { actors, actorTags, work } from "../db/schema/index.ts";
import { createOutbox } from "../outbox/outbox.ts";
import { silentLogger } from "../log.ts";
import { createWorkLedger, type WorkLedger, type WorkRow } from "../work/work-ledger.ts";
import { type ServiceWork, serviceWork } from "../service-work.ts";
import { createWorkRunner, type WorkHandlers, type WorkRunner } from "../work/work-runner.ts";
import { type ActorKinds, type ActorRuntime, ActorVersionError, createActorRuntime, type TagChange } from "./actor-runtime.ts";

/**
 * The runtime, ledger and runner built directly on a database file, as the
 * service wires them (without the service: its wiring is changing), with
 * short timers so delayed transitions fire within a test.
 */

const LONG = 60_000;
const registry = serviceWork(loadConfig({}));

let dir: string | undefined;
const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function freshPath(): string {
  dir = mkdtempSync(join(tmpdir(), "actor-rt-"));
  return join(dir, "t.db");
}

interface Stack {
  database: Database;
  ledger: WorkLedger<ServiceWork>;
  runtime: ActorRuntime;
  runner: WorkRunner;
  close(): Promise<void>;
}

async function openStack(path: string, opts: { timings?: Partial<StreamTimings>; check?: (change: TagChange) => void; holder?: string } = {}): Promise<Stack> {
  const database = await createDatabase({ url: `file:${path}` });
  const ledger = createWorkLedger({ database, holder: opts.holder ?? `test_${Math.random().toString(36).slice(2)}`, leaseMs: 300, work: registry });
  const timings: StreamTimings = { leadMs: 0, idleMs: LONG, reconnectMs: LONG, ...opts.timings };
  const check = opts.check;
  const kinds: ActorKinds = {
    video: { machine: videoMachine, version: 1, statusOf: videoStatus },
    livestream: {
      machine: livestreamMachine.provide({ delays: streamDelays(timings) }),
      version: 2,
      migrate: migrateStream,
      statusOf: streamStatus,
      ...(check ? { check: async (change) => check(change) } : {}),
    },
  };
  const runtime = createActorRuntime({ database, logger: silentLogger, kinds, ledger });
  const noop = { run: async () => undefined };
  const handlers: WorkHandlers<ServiceWork> = {
    "actor-timer": { run: (row) => runtime.fireTimer(row).then(() => undefined) },
    "actor-message": { run: (row) => runtime.deliver(row).then(() => undefined) },
    "fetch-source": noop,
    transcode: noop,
    "live-finalize": noop,
    "live-watch": noop,
    "live-files-remove": noop,
    retention: noop,
  };
  const runner = createWorkRunner({ ledger, handlers, logger: silentLogger, pollMs: 50 });
  runtime.onWork(() => runner.wake());
  let closed = false;
  const stack = {
    database,
    ledger,
    runtime,
    runner,
    async close() {
      if (closed) return;
      closed = true;
      await runner.stop();
      database.close();
    },
  };
  opened.push(stack);
  return stack;
}

const tagsOf = async (database: Database, id: string) => (await database.db.select({ tag: actorTags.tag }).from(actorTags).where(eq(actorTags.actorId, id))).map((r) => r.tag).sort();
const workOf = (database: Database, type: string) => database.db.select().from(work).where(eq(work.type, type));
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
const recording = (assetId: string): RecordingInfo => ({ asset_id: assetId, transcoding: true, duration_seconds: 6, resolution: "640x360", width: 640, height: 360 });

describe("delayed transitions", () => {
  test("a booked stream becomes READY_TO_STREAM on time after a restart, with its tags updated", async () => {
    const path = freshPath();
    const a = await openStack(path);
    a.runner.start();
    const scheduledAt = inMs(600);
    const created = await a.runtime.create("livestream", streamInput({ id: "ls_restart", scheduledAt }));
    expect(created.record.status).toBe("SCHEDULED");
    expect(await tagsOf(a.database, "ls_restart")).toEqual(["booked"]);
    const timers = await workOf(a.database, "actor-timer");
    expect(timers).toHaveLength(1);
    expect(timers[0]).toMatchObject({ status: "queued", entityId: "ls_restart" });
    // Process A goes away before the booking is due: nothing of the timer lives in its memory.
    await a.close();

    const b = await openStack(path);
    b.runner.start();
    const ready = await until(
      () => b.runtime.get("livestream", "ls_restart"),
      (r) => r?.status === "READY_TO_STREAM",
    );
    expect(ready!.value).toEqual({ ready: "idle" });
    // Not early: the transition was stored once the booking was due.
    expect(ready!.updatedAt).toBeGreaterThanOrEqual(Date.parse(scheduledAt));
    expect(await tagsOf(b.database, "ls_restart")).toEqual(["acceptsPublish", "holdsSlot"]);
    // The fired timer is done; entering ready armed the idle timer.
    const after = await until(
      () => workOf(b.database, "actor-timer"),
      (rows) => rows.some((r) => r.status === "done"),
    );
    expect(after.map((r) => r.status).sort()).toEqual(["done", "queued"]);
  });

  test("a delayed transition is cancelled when its state is left: the timer row is gone and nothing fires", async () => {
    const s = await openStack(freshPath());
    s.runner.start();
    const scheduledAt = inMs(300);
    await s.runtime.create("livestream", streamInput({ id: "ls_cancel", scheduledAt }));
    expect(await workOf(s.database, "actor-timer")).toHaveLength(1);

    const ended = await s.runtime.send("livestream", "ls_cancel", { type: "END_REQUESTED", at: new Date().toISOString(), durationSeconds: null });
    expect(ended!.record.status).toBe("ENDED");
    expect(await workOf(s.database, "actor-timer")).toHaveLength(0);
    expect(await s.database.db.select().from(work)).toHaveLength(0);

    // Well past the booking, with the runner polling: the stream is as the end left it.
    await Bun.sleep(Date.parse(scheduledAt) - Date.now() + 300);
    const later = await s.runtime.get("livestream", "ls_cancel");
    expect(later!.status).toBe("ENDED");
    expect(later!.version).toBe(ended!.record.version);
    expect(await tagsOf(s.database, "ls_cancel")).toEqual(["settled"]);
  });

  /**
   * BUG (fireTimer / ledger.cancelKey): a timer row that the runner has already
   * claimed (status running) is not cancelled when its state is left
   * (`cancelKey` deletes queued rows only), and re-arming the same timer while
   * it runs is swallowed by the dedupe key (`enqueue` answers the running row).
   * So when the state is left and re-entered between the claim and the fire
   * (a publisher leaves, comes back and leaves again), the stale timer still
   * fires into the new state: the second reconnect window is cut to nothing
   * and the broadcast is finalized at once. fireTimer's own contract says "a
   * timer cancelled by a transition that committed first does nothing".
   */
  test("a claimed timer whose state was left and re-entered does not fire into the new state", async () => {
    const s = await openStack(freshPath(), { timings: { reconnectMs: 50 } });
    await s.runtime.create("livestream", streamInput({ id: "ls_stale" }));
    await s.runtime.send("livestream", "ls_stale", { type: "MEDIA_OBSERVED", at: new Date().toISOString() });
    await s.runtime.send("livestream", "ls_stale", { type: "PUBLISHER_LEFT" });
    await Bun.sleep(80);
    // The runner's claim of the due reconnect timer (the fire follows in its own transaction).
    const claimed = (await s.ledger.claim("actor-timer")) as WorkRow<ServiceWork, "actor-timer"> | null;
    expect(claimed?.payload.sendId).toContain("reconnectWindow");

    // Meanwhile the publisher comes back and leaves again: a new window starts.
    await s.runtime.send("livestream", "ls_stale", { type: "PUBLISH_STARTED" });
    await s.runtime.send("livestream", "ls_stale", { type: "PUBLISHER_LEFT" });

    await s.runtime.fireTimer(claimed!);
    const now = await s.runtime.get("livestream", "ls_stale");
    expect(now!.value).toEqual({ live: "waiting" });
    // And the new window has a timer of its own.
    const queued = (await workOf(s.database, "actor-timer")).filter((r) => r.status === "queued");
    expect(queued).toHaveLength(1);
  });
});

describe("events are typed by kind", () => {
  /** Never called: tsc (`npm run lint`) fails if a misspelt event compiles. */
  function misspelt(runtime: ActorRuntime, id: string) {
    // @ts-expect-error MEDIA_OBSERVD is not a live stream event.
    void runtime.send("livestream", id, { type: "MEDIA_OBSERVD", at: "x" });
    // @ts-expect-error READY is not a video event.
    void runtime.send("video", id, { type: "READY" });
    // The correctly spelt ones compile.
    void runtime.send("livestream", id, { type: "MEDIA_OBSERVED", at: "x" });
    void runtime.send("video", id, { type: "PROGRESS", percent: 10 });
  }

  test("a misspelt event does not compile (checked by tsc)", () => {
    expect(typeof misspelt).toBe("function");
  });

  /** Never called: tsc fails if a tag its kind's machine does not declare compiles (issue 25: typed tags, not strings). */
  async function misspeltTags(runtime: ActorRuntime, id: string) {
    const stream = await runtime.get("livestream", id);
    // @ts-expect-error holdSlot is not a live stream tag.
    void stream?.tags.has("holdSlot");
    // @ts-expect-error transcoding is a video's tag, not a live stream's.
    void runtime.countTagged("livestream", "transcoding");
    // @ts-expect-error onAir is a live stream's tag, not a video's.
    void runtime.tagged("video", "onAir");
    // The declared ones compile.
    void stream?.tags.has("holdsSlot");
    void runtime.countTagged("livestream", "holdsSlot");
    void runtime.tagged("video", "settled");
  }

  test("a tag the kind's machine does not declare does not compile (checked by tsc)", () => {
    expect(typeof misspeltTags).toBe("function");
  });
});

describe("effects are rows of the transition's transaction", () => {
  class NoSlot extends Error {
    override name = "NoSlot";
  }
  const refuseSlots = (change: TagChange) => {
    if (change.entered("holdsSlot")) throw new NoSlot("no slot");
  };

  test("a creation refused by check leaves no actor, tag, outbox or work row", async () => {
    const s = await openStack(freshPath(), { check: refuseSlots });
    // Unbooked: it would enter ready (holdsSlot), emit LIVESTREAM_SCHEDULED and arm the idle timer.
    await expect(s.runtime.create("livestream", streamInput({ id: "ls_refused" }))).rejects.toBeInstanceOf(NoSlot);
    expect(await s.database.db.select().from(actors)).toHaveLength(0);
    expect(await s.database.db.select().from(actorTags)).toHaveLength(0);
    expect(await createOutbox({ database: s.database }).readAfter(0, { limit: 100 })).toHaveLength(0);
    expect(await s.database.db.select().from(work)).toHaveLength(0);
  });

  test("a timer transition refused by check changes nothing and writes nothing", async () => {
    const s = await openStack(freshPath(), { check: refuseSlots });
    await s.runtime.create("livestream", streamInput({ id: "ls_refused_timer", scheduledAt: inMs(30) }));
    const outboxBefore = await createOutbox({ database: s.database }).readAfter(0, { limit: 100 });
    expect(outboxBefore.map((r) => r.event)).toEqual(["LIVESTREAM_SCHEDULED"]);
    await Bun.sleep(60);
    const row = (await s.ledger.claim("actor-timer")) as WorkRow<ServiceWork, "actor-timer"> | null;
    expect(row).not.toBeNull();

    await expect(s.runtime.fireTimer(row!)).rejects.toBeInstanceOf(NoSlot);
    const rec = await s.runtime.get("livestream", "ls_refused_timer");
    expect(rec).toMatchObject({ status: "SCHEDULED", value: "scheduled", version: 1 });
    expect(await tagsOf(s.database, "ls_refused_timer")).toEqual(["booked"]);
    expect(await createOutbox({ database: s.database }).readAfter(0, { limit: 100 })).toHaveLength(1);
    // Only the timer row itself: no idle timer was armed.
    const rows = await s.database.db.select().from(work);
    expect(rows.map((r) => [r.id, r.status])).toEqual([[row!.id, "running"]]);
  });
});

describe("machine versions", () => {
  async function insertRow(database: Database, id: string, machineVersion: number, value: unknown, status: string) {
    const now = Date.now();
    await database.write((tx) =>
      tx.insert(actors).values({ id, kind: "livestream", orgId: "org_test", status, state: { value, context: streamInput({ id }) }, version: 1, machineVersion, createdAt: now, updatedAt: now }),
    );
  }

  test("a version 1 row is read in version 2's terms and upgraded with its timer armed", async () => {
    const s = await openStack(freshPath());
    await insertRow(s.database, "ls_v1_ready", 1, "ready", "READY_TO_STREAM");
    await insertRow(s.database, "ls_v1_live", 1, "live", "LIVE");

    const read = await s.runtime.get("livestream", "ls_v1_ready");
    expect(read!.value).toEqual({ ready: "idle" });
    expect(read!.status).toBe("READY_TO_STREAM");
    expect([...read!.tags].sort()).toEqual(["acceptsPublish", "holdsSlot"]);
    expect((await s.runtime.get("livestream", "ls_v1_live"))!.value).toEqual({ live: "waiting" });

    expect(await s.runtime.upgrade("livestream", { type: "UPGRADED" })).toBe(2);
    const rows = await s.database.db.select().from(actors);
    for (const r of rows) expect(r.machineVersion).toBe(2);
    const ready = rows.find((r) => r.id === "ls_v1_ready")!;
    expect((ready.state as { value: unknown }).value).toEqual({ ready: "idle" });
    // The timers version 1 kept elsewhere are rows now: the idle timeout and the reconnect window.
    const timers = await workOf(s.database, "actor-timer");
    expect(timers.map((t) => [t.entityId, t.status, (t.payload as { sendId: string }).sendId]).sort()).toEqual([
      ["ls_v1_live", "queued", "xstate.after.reconnectWindow.livestream.live.waiting"],
      ["ls_v1_ready", "queued", "xstate.after.idleTimeout.livestream.ready.idle"],
    ]);
    expect(await tagsOf(s.database, "ls_v1_ready")).toEqual(["acceptsPublish", "holdsSlot"]);
    expect(await tagsOf(s.database, "ls_v1_live")).toEqual(["acceptsPublish", "hasPublisher", "holdsSlot", "onAir"]);
    // Nothing older is left.
    expect(await s.runtime.upgrade("livestream", { type: "UPGRADED" })).toBe(0);
  });

  test("a row stored by a newer machine is refused, not guessed at", async () => {
    const s = await openStack(freshPath());
    await insertRow(s.database, "ls_v99", 99, { someday: "maybe" }, "LIVE");
    const err = await s.runtime.get("livestream", "ls_v99").catch((e) => e);
    expect(err).toBeInstanceOf(ActorVersionError);
    expect(err).toMatchObject({ actorId: "ls_v99", stored: 99, known: 2 });
    await expect(s.runtime.send("livestream", "ls_v99", { type: "DELETE" })).rejects.toBeInstanceOf(ActorVersionError);
    expect(await s.runtime.upgrade("livestream", { type: "UPGRADED" })).toBe(0);
    const [row] = await s.database.db.select().from(actors);
    expect(row).toMatchObject({ machineVersion: 99, version: 1, status: "LIVE" });
  });
});

describe("durable messages between actors", () => {
  test("a completed recording tells its stream in the same transaction; the runner delivers RECORDING_TRANSCODED", async () => {
    const s = await openStack(freshPath());
    const streamId = "ls_rec";
    const videoId = "vid_rec";
    await s.runtime.create("video", videoInput({ id: videoId, kind: "LIVESTREAM_RECORDING", sourceUrl: null, stream: { id: streamId, stream_key: "key" } }));
    await s.runtime.create("livestream", streamInput({ id: streamId }));
    await s.runtime.send("livestream", streamId, { type: "MEDIA_OBSERVED", at: new Date().toISOString() });
    const ended = await s.runtime.send("livestream", streamId, { type: "PIPELINE_ENDED", at: new Date().toISOString(), durationSeconds: 6, transcodingInSecs: 10, recording: recording(videoId) });
    expect(ended!.record.value).toBe("recorded");
    expect(ended!.record.context.playbackUrl).toBeNull();

    await s.runtime.send("video", videoId, { type: "TRANSCODING_STARTED", transcoderId: "t1" });
    let seenInside: unknown[] = [];
    const outcome = { url: "http://localhost/videos/vid_rec/manifest.m3u8", durationSeconds: 6, sizeBytes: 1000, renditions: [], storage: {} };
    const done = await s.runtime.send(
      "video",
      videoId,
      { type: "TRANSCODING_COMPLETED", outcome },
      {
        within: async (tx) => {
          seenInside = await tx.select().from(work).where(eq(work.entityId, streamId));
        },
      },
    );
    expect(done!.record.status).toBe("COMPLETED");
    // Written by the transition's own transaction, before it committed.
    expect(seenInside).toHaveLength(1);
    expect(seenInside[0]).toMatchObject({
      type: "actor-message",
      status: "queued",
      payload: { kind: "livestream", actorId: streamId, event: { type: "RECORDING_TRANSCODED", playbackUrl: outcome.url } },
    });
    expect((await s.runtime.get("livestream", streamId))!.context.playbackUrl).toBeNull();

    s.runner.start();
    const told = await until(
      () => s.runtime.get("livestream", streamId),
      (r) => r?.context.playbackUrl === outcome.url,
    );
    expect(told!.context.recording).toMatchObject({ asset_id: videoId, transcoding: false });
    await until(
      () => s.database.db.select().from(work).where(eq(work.entityId, streamId)),
      (rows) => rows.every((r) => r.status === "done"),
    );
  });
});
