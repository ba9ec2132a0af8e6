import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createOutbox } from "../outbox/outbox.ts";
import { actors, actorTags, playbackAccess, rateLimits, streamKeys, uploads, webhookAttempts, webhookDeliveries, webhookEndpoints, work } from "../db/schema/index.ts";
import { createLogger, type LogTags, silentLogger } from "../log.ts";
import { analyticsRetentionRules } from "../analytics/analytics-retention.ts";
import { createRetention } from "./retention.ts";
import { DAY, dirAt, type Fixture, fileAt, openFixture, rows } from "./retention-fixture.ts";

let fx: Fixture;
const now = Date.now();
const HOUR = 3_600_000;

beforeEach(async () => {
  fx = await openFixture();
});
afterEach(() => fx.close());

const sweep = (opts: { batchSize?: number } = {}) => createRetention({ database: fx.database, config: fx.config, logger: silentLogger, ...opts }).sweep(now);
const ids = async <T>(query: PromiseLike<T[]>, pick: (r: T) => string | number) => (await query).map(pick).sort();

describe("each class of row is deleted after its period and kept before it", () => {
  test("outbox: fanned out more than OUTBOX_RETENTION_MS (7 days) ago; never a row still waiting for fan-out", async () => {
    const r = rows(fx.database);
    await r.outbox({ createdAt: now - 8 * DAY, fannedOutAt: now - 8 * DAY });
    const recent = await r.outbox({ createdAt: now - 8 * DAY, fannedOutAt: now - 6 * DAY });
    const waiting = await r.outbox({ createdAt: now - 60 * DAY, fannedOutAt: null });
    const report = await sweep();
    expect(report.outbox).toBe(1);
    expect(await ids(createOutbox({ database: fx.database }).readAfter(0, { limit: 100 }), (o) => o.seq)).toEqual([recent, waiting].sort());
  });

  test("webhook deliveries: settled (delivered, abandoned, dropped) and created more than 30 days ago, with their attempts; pending ones stay", async () => {
    const r = rows(fx.database);
    await r.delivery({ status: "delivered", createdAt: now - 31 * DAY, attempts: 2 });
    await r.delivery({ status: "abandoned", createdAt: now - 31 * DAY, attempts: 7 });
    await r.delivery({ status: "dropped", createdAt: now - 31 * DAY, attempts: 1 });
    const pending = await r.delivery({ status: "pending", createdAt: now - 31 * DAY, attempts: 3 });
    const recent = await r.delivery({ status: "delivered", createdAt: now - 29 * DAY, attempts: 1 });
    const report = await sweep();
    expect(report.webhook_deliveries).toBe(3);
    expect(report.webhook_attempts).toBe(10);
    expect(await ids(fx.database.db.select().from(webhookDeliveries), (d) => d.id)).toEqual([pending, recent].sort());
    expect(await ids(fx.database.db.select().from(webhookAttempts), (a) => a.deliveryId)).toEqual([pending, pending, pending, recent].sort());
  });

  test("webhook endpoints: deleted more than the deliveries period ago, once none of their deliveries is left", async () => {
    const r = rows(fx.database);
    await r.endpoint({ deletedAt: now - 31 * DAY });
    const recent = await r.endpoint({ deletedAt: now - 29 * DAY });
    const live = await r.endpoint({ deletedAt: null, createdAt: now - 400 * DAY });
    const withDelivery = await r.endpoint({ deletedAt: now - 31 * DAY });
    await r.delivery({ endpointId: withDelivery, status: "pending", createdAt: now - 40 * DAY });
    const report = await sweep();
    expect(report.webhook_endpoints).toBe(1);
    expect(await ids(fx.database.db.select().from(webhookEndpoints), (e) => e.id)).toEqual([recent, live, withDelivery].sort());
  });

  test("work: finished (done, failed, cancelled) more than WORK_RETENTION_MS (7 days) ago; open rows whatever their age", async () => {
    const r = rows(fx.database);
    for (const status of ["done", "failed", "cancelled"]) await r.work({ status, finishedAt: now - 8 * DAY });
    const recent = await r.work({ status: "done", finishedAt: now - 6 * DAY });
    const queued = await r.work({ status: "queued", finishedAt: null, createdAt: now - 90 * DAY });
    const running = await r.work({ status: "running", finishedAt: null, createdAt: now - 90 * DAY });
    const report = await sweep();
    expect(report.work).toBe(3);
    expect(await ids(fx.database.db.select().from(work), (w) => w.id)).toEqual([recent, queued, running].sort());
  });

  test("uploads: slots expired more than UPLOAD_RETENTION_MS (1 day) ago and their files; an upload a video was registered from stays while the video does", async () => {
    const r = rows(fx.database);
    const path = (id: string) => join(fx.dir, "uploads", id);
    const unfinished = await r.upload({ status: "pending", expiresAt: now - 2 * DAY });
    fileAt(`${path(unfinished)}.part`, now, 2 * DAY);
    const neverRegistered = await r.upload({ status: "complete", expiresAt: now - 2 * DAY });
    fileAt(path(neverRegistered), now, 2 * DAY);
    const used = await r.upload({ status: "complete", expiresAt: now - 2 * DAY });
    fileAt(path(used), now, 2 * DAY); // a transcode that failed leaves it
    await r.actor({ kind: "video", status: "ERROR", deletedAt: null, dedupeKey: `https://video.example.com/uploads/${used}` });
    const usedByDeleted = await r.upload({ status: "complete", expiresAt: now - 2 * DAY });
    await r.actor({ kind: "video", status: "DELETED", deletedAt: now - HOUR, dedupeKey: `https://video.example.com/uploads/${usedByDeleted}` });
    const stillReceiving = await r.upload({ status: "receiving", expiresAt: now - 2 * DAY });
    fileAt(`${path(stillReceiving)}.part`, now, 60_000);
    const recent = await r.upload({ status: "pending", expiresAt: now - 12 * HOUR });

    const report = await sweep();
    expect(report.uploads).toBe(3);
    expect(report.upload_files).toBe(2);
    expect(await ids(fx.database.db.select().from(uploads), (u) => u.id)).toEqual([used, stillReceiving, recent].sort());
    expect(existsSync(`${path(unfinished)}.part`)).toBe(false);
    expect(existsSync(path(neverRegistered))).toBe(false);
    expect(existsSync(path(used))).toBe(true);
    expect(existsSync(`${path(stillReceiving)}.part`)).toBe(true);
  });

  test("actors: soft-deleted more than DELETED_ACTOR_RETENTION_MS (30 days) ago, with their tags, stream key digests and a deleted video's leftover folders", async () => {
    const r = rows(fx.database);
    const video = await r.actor({ kind: "video", status: "DELETED", deletedAt: now - 31 * DAY, tags: ["settled"] });
    dirAt(join(fx.dir, "work", video), now, 31 * DAY);
    dirAt(join(fx.dir, "originals", video), now, 31 * DAY);
    const stream = await r.actor({ kind: "livestream", status: "DELETED", deletedAt: now - 31 * DAY, tags: ["settled"] });
    await r.streamKey(stream);
    const recent = await r.actor({ kind: "video", status: "DELETED", deletedAt: now - 29 * DAY, tags: ["settled"] });
    const live = await r.actor({ kind: "video", status: "COMPLETED", deletedAt: null, tags: ["settled"] });
    await r.streamKey("str_live");

    const report = await sweep();
    expect(report.actors).toBe(2);
    expect(report.actor_tags).toBe(2);
    expect(report.stream_key_digests).toBe(1);
    expect(report.video_dirs).toBe(2);
    expect(await ids(fx.database.db.select().from(actors), (a) => a.id)).toEqual([recent, live].sort());
    expect(await ids(fx.database.db.select().from(actorTags), (t) => t.actorId)).toEqual([recent, live].sort());
    expect(await ids(fx.database.db.select().from(streamKeys), (k) => k.streamId)).toEqual(["str_live"]);
    expect(existsSync(join(fx.dir, "work", video))).toBe(false);
    expect(existsSync(join(fx.dir, "originals", video))).toBe(false);
  });

  test("playback_access (issue 27): a signed asset's rules go with its actor, 30 days after its delete; a live or recently deleted asset's stay", async () => {
    const r = rows(fx.database);
    const gone = await r.actor({ kind: "video", status: "DELETED", deletedAt: now - 31 * DAY });
    const goneStream = await r.actor({ kind: "livestream", status: "DELETED", deletedAt: now - 31 * DAY });
    const recent = await r.actor({ kind: "video", status: "DELETED", deletedAt: now - 29 * DAY });
    const live = await r.actor({ kind: "livestream", status: "LIVE", deletedAt: null });
    await Promise.all([gone, goneStream, recent, live].map((id) => r.playbackAccess(id)));

    const report = await sweep();
    expect(report.playback_access).toBe(2);
    expect(await ids(fx.database.db.select().from(playbackAccess), (a) => a.assetId)).toEqual([recent, live].sort());
  });

  test("a deleted video's served folder is removed through removeMedia when given", async () => {
    const r = rows(fx.database);
    const video = await r.actor({ kind: "video", status: "DELETED", deletedAt: now - 31 * DAY });
    await r.actor({ kind: "livestream", status: "DELETED", deletedAt: now - 31 * DAY });
    const removed: string[] = [];
    await createRetention({ database: fx.database, config: fx.config, logger: silentLogger, removeMedia: async (id) => void removed.push(id) }).sweep(now);
    expect(removed).toEqual([video]);
  });

  test("rate limits: windows closed for a whole window (RATE_LIMIT_WINDOW_MS) already", async () => {
    const r = rows(fx.database);
    await r.rateLimit("org:old", now - 3 * 60_000);
    await r.rateLimit("org:closed", now - 90_000);
    await r.rateLimit("org:open", now - 30_000);
    const report = await sweep();
    expect(report.rate_limits).toBe(1);
    expect(await ids(fx.database.db.select().from(rateLimits), (l) => l.key)).toEqual(["org:closed", "org:open"]);
  });
});

describe("folders", () => {
  const flv = (id: string) => join(fx.dir, "recordings", `${id}.flv`);

  test("a recording whose video is settled (tag `settled`: COMPLETED, ERROR) or deleted goes; one still needed stays", async () => {
    const r = rows(fx.database);
    const old = 2 * HOUR;
    // Ended, its recording video failed for good: nothing reads the file again.
    const failed = await r.actor({ kind: "livestream", status: "ENDED", deletedAt: null, tags: ["settled"] });
    await r.actor({ kind: "video", status: "ERROR", deletedAt: null, dedupeKey: `recording:${failed}`, tags: ["settled"] });
    fileAt(flv(failed), now, old);
    // Ended with no media: no recording video at all.
    const empty = await r.actor({ kind: "livestream", status: "ENDED", deletedAt: null, tags: ["settled"] });
    fileAt(flv(empty), now, old);
    // Deleted stream, deleted recording.
    const deleted = await r.actor({ kind: "livestream", status: "DELETED", deletedAt: now - HOUR });
    await r.actor({ kind: "video", status: "DELETED", deletedAt: now - HOUR, dedupeKey: `recording:${deleted}` });
    fileAt(flv(deleted), now, old);
    // The stream row itself is gone (purged).
    fileAt(flv("str_gone"), now, old);

    // Kept: on air (a broadcast holds it).
    const onAir = await r.actor({ kind: "livestream", status: "LIVE", deletedAt: null, tags: ["holdsSlot", "onAir"] });
    await r.broadcast(onAir);
    fileAt(flv(onAir), now, old);
    // Kept: ended, its finalize still open.
    const finalizing = await r.actor({ kind: "livestream", status: "ENDED", deletedAt: null, tags: ["settled"] });
    await r.work({ type: "live-finalize", status: "queued", finishedAt: null, entityId: finalizing });
    fileAt(flv(finalizing), now, old);
    // Kept: its recording video is still transcoding (the transcode names the file).
    const transcoding = await r.actor({ kind: "livestream", status: "ENDED", deletedAt: null, tags: ["settled"] });
    const video = await r.actor({ kind: "video", status: "TRANSCODING", deletedAt: null, dedupeKey: `recording:${transcoding}` });
    await r.work({ type: "transcode", status: "running", finishedAt: null, entityId: video, payload: { sourcePath: flv(transcoding) } });
    fileAt(flv(transcoding), now, old);
    // Kept: a transcode names a file whose stream is gone.
    fileAt(flv("str_orphan_in_use"), now, old);
    await r.work({ type: "transcode", status: "queued", finishedAt: null, entityId: "vid_y", payload: { sourcePath: flv("str_orphan_in_use") } });
    // Kept: ready for a publish.
    const ready = await r.actor({ kind: "livestream", status: "READY_TO_STREAM", deletedAt: null, tags: ["holdsSlot", "acceptsPublish"] });
    fileAt(flv(ready), now, old);
    // Kept: written within the grace period, whatever the rows say.
    const fresh = await r.actor({ kind: "livestream", status: "ENDED", deletedAt: null, tags: ["settled"] });
    fileAt(flv(fresh), now, 60_000);

    const report = await sweep();
    expect(report.recordings).toBe(4);
    for (const id of [failed, empty, deleted, "str_gone"]) expect(existsSync(flv(id))).toBe(false);
    for (const id of [onAir, finalizing, transcoding, "str_orphan_in_use", ready, fresh]) expect(existsSync(flv(id))).toBe(true);
  });

  test("a work dir whose video is settled (tag `settled`), deleted or gone, with no open work, goes; one in use stays", async () => {
    const r = rows(fx.database);
    const dir = (id: string) => join(fx.dir, "work", id);
    const old = 2 * HOUR;
    const completed = await r.actor({ kind: "video", status: "COMPLETED", deletedAt: null, tags: ["settled"] });
    const failed = await r.actor({ kind: "video", status: "ERROR", deletedAt: null, tags: ["settled"] });
    const deleted = await r.actor({ kind: "video", status: "DELETED", deletedAt: now - HOUR });
    for (const id of [completed, failed, deleted, "vid_gone"]) dirAt(dir(id), now, old);
    const transcoding = await r.actor({ kind: "video", status: "TRANSCODING", deletedAt: null });
    dirAt(dir(transcoding), now, old);
    const retrying = await r.actor({ kind: "video", status: "ERROR", deletedAt: null, tags: ["settled"] });
    await r.work({ type: "fetch-source", status: "queued", finishedAt: null, entityId: retrying });
    dirAt(dir(retrying), now, old);
    dirAt(dir("vid_fresh"), now, 1000);

    const report = await sweep();
    expect(report.work_dirs).toBe(4);
    for (const id of [completed, failed, deleted, "vid_gone"]) expect(existsSync(dir(id))).toBe(false);
    for (const id of [transcoding, retrying, "vid_fresh"]) expect(existsSync(dir(id))).toBe(true);
  });
});

describe("batches", () => {
  test("a backlog larger than a batch is deleted in several short transactions, until one comes back short", async () => {
    const r = rows(fx.database);
    for (let i = 0; i < 10; i++) await r.work({ status: "done", finishedAt: now - 8 * DAY });
    const writes: number[] = [];
    const write = fx.database.write.bind(fx.database);
    const counting = { ...fx.database, write: ((fn) => write(fn).then((v) => (writes.push(1), v))) as typeof fx.database.write };
    const report = await createRetention({ database: counting, config: fx.config, logger: silentLogger, batchSize: 3 }).sweep(now);
    expect(report.work).toBe(10);
    // Four batches of work (3, 3, 3, 1), one each for the other table rules (found nothing): six, and analytics' own.
    expect(writes.length).toBe(4 + 6 + analyticsRetentionRules().length);
    expect((await fx.database.db.select().from(work)).length).toBe(0);
  });

  test("one structured log line per sweep, with the count of each table and folder", async () => {
    const r = rows(fx.database);
    await r.outbox({ createdAt: now - 8 * DAY, fannedOutAt: now - 8 * DAY });
    const lines: Array<{ msg: string } & LogTags> = [];
    const logger = createLogger({ level: "info", write: (line) => lines.push(JSON.parse(line)) });
    await createRetention({ database: fx.database, config: fx.config, logger }).sweep(now);
    const sweeps = lines.filter((l) => l.msg === "Retention sweep");
    expect(sweeps.length).toBe(1);
    expect(sweeps[0]).toMatchObject({ component: "retention", outbox: 1, webhook_deliveries: 0, work: 0, recordings: 0, failed_rules: 0 });
    expect(lines.length).toBe(1);
  });
});
