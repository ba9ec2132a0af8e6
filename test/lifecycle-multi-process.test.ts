import { expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publish, type Publication } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags, looped } from "../media/rtmp/test-support.ts";
import { createDatabase, type Database } from "../src/db/create-database.ts";
import { broadcasts, outbox, work } from "../src/db/schema/index.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { parsePlaylist } from "./support/media-check.ts";
import { getStream, streamIn } from "./support/streams.ts";
import { type Child, spawnService } from "./support/service-process.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

/**
 * The durable live lifecycle across real processes on one database file:
 * each process has its own HTTP and RTMP ports and the same DATA_DIR; the
 * publisher is the in-repo RTMP client pushing the real fixture in real
 * time. Other processes are children (test/support/service-child.ts): two
 * services in one process cannot share a database file.
 */

const LEASE_MS = 1500;
const LEAD_MS = 1000;
// Short leases so a dead process's holds lapse within the test: the broadcast's, and its claimed work's.
const ENV = { LIVE_BROADCAST_LEASE_MS: String(LEASE_MS), LIVE_RECONNECT_MS: "500", JOB_LEASE_MS: "2000", LIVE_SCHEDULE_LEAD_MS: String(LEAD_MS) };

const childStream = async (c: Child, id: string) => (await ok(c.api(`/livestreams/${id}/`), "getLivestream")).data?.stream;

/** Settles with the child's exit, or fails after `ms`. */
async function exitOf(c: Child, ms: number): Promise<{ code: number | null; signal: string | null }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`child still running after ${ms} ms`)), ms)));
  try {
    await Promise.race([c.proc.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
  return { code: c.proc.exitCode, signal: c.proc.signalCode === null ? null : String(c.proc.signalCode) };
}

/** The file's database, opened from the test process while no service of ours is on it. */
const openDatabase = (dataDir: string) => createDatabase({ url: `file:${join(dataDir, "service.db")}` });

async function eventNames(database: Database, id: string): Promise<string[]> {
  const rows = await database.db.select({ event: outbox.event, seq: outbox.seq }).from(outbox).where(eq(outbox.entityId, id));
  return rows.sort((x, y) => x.seq - y.seq).map((r) => r.event);
}

const count = (names: string[], name: string) => names.filter((n) => n === name).length;

/** Tracks whether a publication ended (by our choice or dropped by the server). */
function watchPublication(pub: Publication) {
  const state = { over: false, dropped: false };
  pub.finished.then(
    () => (state.over = true),
    () => {
      state.over = true;
      state.dropped = true;
    },
  );
  return state;
}

test("a second process starting on the database never ends the first one's broadcast; the publisher's departure then ends it once", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-live-mp-"));
  const a = await startTestService({ dataDir, env: ENV });
  let b: Child | undefined;
  let pub: Publication | undefined;
  try {
    const created = await a.api("/livestreams/", { method: "POST", json: { title: "On air at A" } });
    expect(created.status).toBe(201);
    const s = (await ok(created, "createLivestream")).data.stream;
    expect(s.rtmp_url).toContain(`:${a.service.config.rtmpPort}/`);
    // 30 s of real-time media: longer than anything below, closed by the test.
    pub = publish({ url: s.rtmp_url, tags: looped(await fixtureTags(), 5), pace: "realtime" });
    const publication = watchPublication(pub);
    await pub.started;
    await streamIn(a, s.id, ["LIVE"], 60_000);

    b = await spawnService({ ...ENV, DATA_DIR: dataDir }, { orgId: a.orgId, apiKey: a.apiKey });
    expect(b.port).not.toBe(Number(new URL(a.base).port));
    expect(b.rtmpPort).not.toBe(a.service.config.rtmpPort);
    const sentAtStart = pub.tagsSent;

    // B runs for longer than a broadcast lease plus a few seconds: A's stream is untouched, seen through both.
    const until = Date.now() + LEASE_MS + 3500;
    while (Date.now() < until) {
      expect((await getStream(a, s.id)).status).toBe("LIVE");
      expect((await childStream(b, s.id)).status).toBe("LIVE");
      expect((await outboxEvents(a.service, s.id)).map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED"]);
      await Bun.sleep(250);
    }
    expect(publication.over).toBe(false);
    expect(pub.tagsSent).toBeGreaterThan(sentAtStart);
    expect(a.service.live.ingest.isBroadcasting(s.id)).toBe(true);
    const lease = await a.service.database.db.select().from(broadcasts).where(eq(broadcasts.streamId, s.id));
    expect(lease).toHaveLength(1);
    expect(lease[0]!.claimedBy).toBe(a.service.ledger.holder);
    expect(lease[0]!.leaseUntil).toBeGreaterThan(Date.now() - 1000); // renewed by A all along

    // The publisher leaves (B still running): after the reconnect window the broadcast ends once.
    await pub.close();
    expect(publication.dropped).toBe(false);
    await streamIn(a, s.id, ["ENDED"], 80_000);
    await waitFor(async () => (await outboxEvents(a.service, s.id)).length >= 4, { timeoutMs: 40_000, what: "RECORDING_READY" });
    await Bun.sleep(500); // room for a duplicate to show up
    expect((await outboxEvents(a.service, s.id)).map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
    expect(await a.service.database.db.select().from(broadcasts).where(eq(broadcasts.streamId, s.id))).toHaveLength(0);
  } finally {
    pub?.abort();
    await b?.stop();
    await a.stop({ cleanup: false });
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 300_000);

for (const point of ["before-commit", "after-commit"] as const) {
  test(`kill -9 at live-finalize:${point}: another process resumes the finalization; ENDED and RECORDING_READY once, the recording plays`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-live-crash-"));
    const c = await spawnService({ ...ENV, DATA_DIR: dataDir, VIDLIVE_FAULT: `live-finalize:${point}` });
    let f: TestService | undefined;
    let pub: Publication | undefined;
    try {
      const created = await c.api("/livestreams/", { method: "POST", json: { title: `Crash ${point}` } });
      expect(created.status).toBe(201);
      const s = (await ok(created, "createLivestream")).data.stream;
      expect(s.rtmp_url).toContain(`:${c.rtmpPort}/`);
      pub = publish({ url: s.rtmp_url, tags: await fixtureTags(), pace: "realtime" });
      await pub.started;
      await waitFor(async () => (await childStream(c, s.id))?.status === "LIVE", { timeoutMs: 60_000, what: "LIVE at C" });
      await pub.close();

      // The reconnect window runs out, C's finalization reaches the crash point and C kills itself.
      expect(await exitOf(c, 80_000)).toEqual({ code: null, signal: "SIGKILL" });

      // What C left behind, read from the file before anyone else runs.
      const seen = await openDatabase(dataDir);
      try {
        const names = await eventNames(seen, s.id);
        const finalize = await seen.db
          .select()
          .from(work)
          .where(and(eq(work.entityId, s.id), eq(work.type, "live-finalize")));
        expect(finalize).toHaveLength(1);
        expect(finalize[0]).toMatchObject({ status: "running", claimedBy: c.holder });
        const lease = await seen.db.select().from(broadcasts).where(eq(broadcasts.streamId, s.id));
        if (point === "before-commit") {
          // Nothing of the finalization is visible: the stream is still on air, its broadcast still leased by C.
          expect(names).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED"]);
          expect(lease).toHaveLength(1);
          expect(lease[0]!.claimedBy).toBe(c.holder);
        } else {
          // All of it is: the end, the recording, the lease released; only the work row is left running.
          expect(names).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
          expect(lease).toHaveLength(0);
        }
      } finally {
        seen.close();
      }

      // Another process on the same files, without the fault: once C's leases lapse it takes the finalization over.
      f = await startTestService({ dataDir, env: ENV, org: { orgId: c.orgId, apiKey: c.apiKey } });
      const ended = await streamIn(f, s.id, ["ENDED"], 80_000);
      await waitFor(async () => (await f!.service.ledger.openFor(s.id, ["live-finalize"])) === 0, { timeoutMs: 80_000, what: "the finalization done" });
      const finalize = await f.service.database.db
        .select()
        .from(work)
        .where(and(eq(work.entityId, s.id), eq(work.type, "live-finalize")));
      expect(finalize).toHaveLength(1);
      expect(finalize[0]).toMatchObject({ status: "done", claimedBy: f.service.ledger.holder });

      const assetId = ended.recording?.asset_id;
      expect(ended.recording).toMatchObject({ transcoding: true, resolution: "640x360" });
      expect(ended.recording!.duration_seconds).toBeGreaterThanOrEqual(1);
      expect(ended.duration_seconds).toBeGreaterThanOrEqual(1);
      // The live playlist C left open on disk was closed: players see the end. (hls_url names C's base URL, stored
      // at creation; processes behind one public BASE_URL share it, here each has its own port: asked of F.)
      const playlist = await fetch(new URL(new URL(ended.hls_url).pathname, f.base));
      expect(playlist.status).toBe(200);
      expect(parsePlaylist(await playlist.text()).ended).toBe(true);
      expect(assetId).toMatch(/^vid_/);
      const video = await waitFor(
        async () => {
          const v = (await ok(f!.api(`/videos/${assetId}/`), "getVideo")).data?.video;
          return ["COMPLETED", "ERROR"].includes(v?.status) ? v : undefined;
        },
        { timeoutMs: 120_000, what: "the recording transcoded" },
      );
      expect(video).toMatchObject({ status: "COMPLETED", kind: "LIVESTREAM_RECORDING" });
      const playbackUrl = await waitFor(async () => (await getStream(f!, s.id))?.playback_url ?? undefined, { timeoutMs: 40_000, what: "playback_url" });
      expect(playbackUrl).toBe(video.url!);

      await Bun.sleep(500); // room for a duplicate to show up
      const names = (await outboxEvents(f.service, s.id)).map((e) => e.event);
      expect(count(names, "LIVESTREAM_ENDED")).toBe(1);
      expect(count(names, "LIVESTREAM_RECORDING_READY")).toBe(1);
      expect(names).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY"]);
      const recordingEvents = (await outboxEvents(f.service, assetId!)).map((e) => e.event);
      expect(recordingEvents).toEqual(["VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
      expect(await f.service.database.db.select().from(broadcasts).where(eq(broadcasts.streamId, s.id))).toHaveLength(0);
    } finally {
      pub?.abort();
      await c.stop();
      await f?.stop({ cleanup: false });
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
}

test("a stream booked by a process that then died becomes READY_TO_STREAM on time through another process", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-live-book-"));
  const d = await spawnService({ ...ENV, DATA_DIR: dataDir });
  let e: TestService | undefined;
  try {
    const scheduledAt = new Date(Date.now() + 30_000).toISOString(); // room to start, book and kill D on a loaded machine
    const due = Date.parse(scheduledAt) - LEAD_MS;
    const created = await d.api("/livestreams/schedule/", { method: "POST", json: { title: "Booked at D", scheduled_at: scheduledAt } });
    expect(created.status).toBe(201);
    const s = (await ok(created, "scheduleLivestream")).data.stream;
    expect(s.status).toBe("SCHEDULED");

    d.proc.kill("SIGKILL");
    expect(await exitOf(d, 20_000)).toEqual({ code: null, signal: "SIGKILL" });
    expect(Date.now()).toBeLessThan(due); // D died before the booking came due

    e = await startTestService({ dataDir, env: ENV, org: { orgId: d.orgId, apiKey: d.apiKey } });
    // Each observation with the time its answer arrived: READY_TO_STREAM answered before `due` would be early.
    const seen: Array<{ status: string; at: number }> = [];
    const ready = await waitFor(
      async () => {
        const stream = await getStream(e!, s.id);
        seen.push({ status: stream?.status, at: Date.now() });
        return stream?.status === "READY_TO_STREAM" ? stream : undefined;
      },
      { timeoutMs: due - Date.now() + 10_000, intervalMs: 100, what: "READY_TO_STREAM" },
    );
    expect(ready.scheduled_at).toBe(scheduledAt);
    expect(seen[0]!.status).toBe("SCHEDULED");
    for (const o of seen) if (o.at < due) expect(o.status).toBe("SCHEDULED");
    expect(seen.at(-1)!.at).toBeGreaterThanOrEqual(due);

    // The booking's durable timer, written by D, fired by E no earlier than it was due.
    const timers = await e.service.database.db
      .select()
      .from(work)
      .where(and(eq(work.entityId, s.id), eq(work.type, "actor-timer"), eq(work.status, "done")));
    expect(timers).toHaveLength(1);
    // Due at the booking's lead: never before it, and late only by the milliseconds between the
    // machine's clock read (the delay) and the runtime's (now + delay) in the same transition.
    expect(timers[0]!.runAfter).toBeGreaterThanOrEqual(due);
    expect(timers[0]!.runAfter).toBeLessThan(due + 100);
    expect(timers[0]!.claimedBy).toBe(e.service.ledger.holder);
    expect(timers[0]!.finishedAt!).toBeGreaterThanOrEqual(due);
  } finally {
    await d.stop();
    await e?.stop({ cleanup: false });
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 300_000);
