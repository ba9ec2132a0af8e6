import { actorKinds } from "../actor-kinds-config.ts";
import { PUBLIC_ONLY } from "../playback/asset-playback.ts";
import { afterAll, afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { and, eq, sql } from "drizzle-orm";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { PublishRequest } from "../../media/rtmp/publish-handlers.ts";
import { createActorRuntime } from "../actors/actor-runtime.ts";
import { loadConfig } from "../config.ts";
import { createDatabase } from "../db/create-database.ts";
import { broadcasts, work } from "../db/schema/index.ts";
import { createOutbox } from "../outbox/outbox.ts";
import { silentLogger } from "../log.ts";
import { createOrgStore } from "../orgs/org-store.ts";
import { createSecretCipher } from "../secrets/secret-cipher.ts";
import { loadServerSecret } from "../secrets/server-secret.ts";
import { createLocalObjectStore } from "../storage/local-object-store.ts";
import { createMediaStore } from "../storage/media-store.ts";
import { createS3ObjectStore } from "../storage/s3-object-store.ts";
import { type S3Server, startS3rver } from "../../test/support/s3rver.ts";
import { createUploadStore } from "../videos/upload-store.ts";
import { createVideoService } from "../videos/video-service.ts";
import { type ServiceWork, serviceWork } from "../service-work.ts";
import { createWorkLedger, type WorkRow as AnyWorkRow } from "../work/work-ledger.ts";
import type { WorkContext } from "../work/work-runner.ts";
import type { WorkType as AnyWorkType } from "../work/work-types.ts";
import { createBroadcastLeases } from "./broadcast-leases.ts";
import { createLiveFiles } from "./live-files.ts";

type WorkType = AnyWorkType<ServiceWork>;
type WorkRow<T extends WorkType> = AnyWorkRow<ServiceWork, T>;
import { createLiveWork } from "./live-finalizer.ts";
import { createLiveIngest } from "./live-ingest.ts";
import { createLiveUrls } from "./live-urls.ts";
import { createLivestreamService } from "./livestream-service.ts";
import { createStreamKeys } from "./stream-keys.ts";

setDefaultTimeout(120_000);

/**
 * The failure paths of a broadcast's end, on the real pieces as src/service.ts
 * wires them (database file, work ledger, actor runtime with the service's
 * kinds, broadcast leases, live files, video service, live ingest), without
 * a work runner: each test runs one handler by hand and reads the rows.
 * "Another process" is a `broadcasts` row with another `claimed_by`.
 */

const RETENTION_MS = 60_000;
const LEASE_MS = 10_000;
/** A real FLV recording (H.264 + AAC, 640x360, 6 s), made by fixtures/make.sh with ffmpeg. */
const FLV_FIXTURE = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** The service's pieces on a fresh DATA_DIR; `s3`: live files and recordings in that bucket (STORAGE=s3). */
async function openStack(opts: { s3?: S3Server } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "live-finalizer-"));
  const config = loadConfig({ DATA_DIR: dataDir, LIVE_FILES_RETENTION_MS: String(RETENTION_MS), LIVE_BROADCAST_LEASE_MS: String(LEASE_MS), LIVE_RECONNECT_MS: "60000" });
  const logger = silentLogger;
  const database = await createDatabase({ url: `file:${join(dataDir, "service.db")}` });
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  cleanups.push(() => database.close());
  const secret = loadServerSecret(dataDir);
  const ledger = createWorkLedger({ database, holder: "proc-here", leaseMs: config.jobLeaseMs, work: serviceWork(config) });
  const urls = createLiveUrls(config, secret);
  const runtime = createActorRuntime({
    database,
    logger,
    ledger,
    kinds: actorKinds(config, logger),
    secrets: createSecretCipher(secret.derive("actor-context")),
  });
  const store = createMediaStore({ dataDir, baseUrl: () => config.baseUrl, secret });
  const uploads = createUploadStore({ database, secret, store, baseUrl: () => config.baseUrl, maxBytes: config.uploadMaxBytes });
  const videos = createVideoService({ runtime, ledger, uploads, store, logger, playback: PUBLIC_ONLY, queueLimit: config.transcodeQueueLimit, onQueued: () => undefined });
  const objects = opts.s3
    ? createS3ObjectStore({ endpoint: opts.s3.endpoint, bucket: opts.s3.bucket, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" })
    : createLocalObjectStore(dataDir);
  const files = createLiveFiles({ dataDir, urls, objects });
  const leases = createBroadcastLeases({ database, holder: ledger.holder, leaseMs: config.liveBroadcastLeaseMs });
  const livestreams = createLivestreamService({ runtime, urls, keys: createStreamKeys({ database, keyDigest: urls.keyDigest }), logger, playback: PUBLIC_ONLY });
  const ingest = createLiveIngest({ runtime, ledger, leases, livestreams, urls, files, logger, kick: () => true });
  const handlers = createLiveWork({ runtime, ledger, leases, ingest, files, videos, filesRetentionMs: config.liveFilesRetentionMs, logger });
  const { org } = await createOrgStore(database).createOrg("Live finalizer tests");
  return { database, ledger, runtime, urls, files, objects, leases, livestreams, ingest, handlers, org, dataDir };
}

type Stack = Awaited<ReturnType<typeof openStack>>;
const ctx: WorkContext = { signal: new AbortController().signal, logger: silentLogger };

/** A stream another process (or this test) put on air: READY_TO_STREAM → publishing → LIVE. */
async function streamOnAir(s: Stack) {
  const created = await s.livestreams.create(s.org, { title: "On air" });
  const id = created.id;
  await s.runtime.send("livestream", id, { type: "PUBLISH_STARTED" });
  const live = await s.runtime.send("livestream", id, { type: "MEDIA_OBSERVED", at: new Date().toISOString() });
  expect(live!.record.value).toEqual({ live: "publishing" });
  return { id, streamKey: created.context.streamKey };
}

/** A `broadcasts` row of another process: `leaseFor` ms from now (negative: lapsed). */
async function foreignLease(s: Stack, streamId: string, leaseFor: number, owner = "proc-elsewhere") {
  const now = Date.now();
  await s.database.write((tx) => tx.insert(broadcasts).values({ streamId, orgId: s.org.id, claimedBy: owner, leaseUntil: now + leaseFor, startedAt: now - 5_000, leftAt: null }));
}

async function workRows(s: Stack, entityId: string, type?: WorkType) {
  return s.database.db
    .select()
    .from(work)
    .where(and(eq(work.entityId, entityId), type ? eq(work.type, type) : undefined));
}

/** The open work row of a type for an entity, as the runner would hand it to its handler. */
async function openRow<T extends WorkType>(s: Stack, entityId: string, type: T): Promise<WorkRow<T>> {
  const rows = (await workRows(s, entityId, type)).filter((r) => r.status === "queued" || r.status === "running");
  expect(rows).toHaveLength(1);
  return rows[0] as unknown as WorkRow<T>;
}

const eventsOf = async (s: Stack, entityId: string) => (await createOutbox({ database: s.database }).ofEntity(entityId)).map((r) => r.event);

const leaseRows = (s: Stack, streamId: string) => s.database.db.select().from(broadcasts).where(eq(broadcasts.streamId, streamId));

const recordings = (s: Stack) => s.runtime.list("video", s.org.id, { limit: 50 });

/** Everything a deferred run must leave as it was. */
async function snapshot(s: Stack, streamId: string) {
  const stream = await s.runtime.get("livestream", streamId);
  return {
    stream: { value: stream?.value, version: stream?.version, context: stream?.context },
    lease: await leaseRows(s, streamId),
    events: await eventsOf(s, streamId),
    work: (await workRows(s, streamId)).map((r) => ({ id: r.id, type: r.type, status: r.status, runAfter: r.runAfter })),
    videos: (await recordings(s)).length,
  };
}

function writeOpenPlaylist(s: Stack, streamId: string): string {
  const dir = s.files.hlsDir(streamId);
  mkdirSync(dir, { recursive: true });
  const playlist = join(dir, "index.m3u8");
  writeFileSync(playlist, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:2.000,\nseg0.ts\n#EXTINF:2.000,\nseg1.ts\n");
  return playlist;
}

function placeRecording(s: Stack, streamId: string): string {
  const flv = s.files.flvPath(streamId);
  mkdirSync(dirname(flv), { recursive: true });
  copyFileSync(FLV_FIXTURE, flv);
  return flv;
}

/** The stream's reconnect window ran out: its timer fires (as the runner would run its `actor-timer` row). */
async function reconnectWindowEnds(s: Stack, streamId: string) {
  const timers = (await workRows(s, streamId, "actor-timer")).filter((r) => r.status === "queued");
  expect(timers).toHaveLength(1);
  await s.database.write((tx) => s.ledger.reschedule(tx, timers[0]!.dedupeKey!, Date.now()));
  const claimed = await s.ledger.claim("actor-timer");
  expect(claimed?.id).toBe(timers[0]!.id);
  await s.runtime.fireTimer(claimed as unknown as WorkRow<"actor-timer">);
}

/** The stream's owner died: its lease lapsed, the stream was told (as `live-watch` does), and no encoder came back in its window. */
async function ownerDied(s: Stack, streamId: string) {
  await foreignLease(s, streamId, -1_000, "proc-dead");
  const lost = await s.runtime.send("livestream", streamId, { type: "BROADCAST_LOST" });
  expect(lost!.record.value).toEqual({ live: "waiting" });
  await reconnectWindowEnds(s, streamId);
  expect((await s.runtime.get("livestream", streamId))!.value).toEqual({ live: "finalizing" });
}

describe("live-finalize", () => {
  test("another live process holds the broadcast: deferred, nothing changed (stream, lease, outbox, work)", async () => {
    const s = await openStack();
    const { id } = await streamOnAir(s);
    await foreignLease(s, id, LEASE_MS);
    // POST /end/ answered by this process while the other one owns the broadcast: ENDED at once, finalization queued here.
    await s.runtime.send("livestream", id, { type: "END_REQUESTED", at: new Date().toISOString(), durationSeconds: 5 });
    writeOpenPlaylist(s, id);
    const row = await openRow(s, id, "live-finalize");
    const before = await snapshot(s, id);

    const result = await s.handlers["live-finalize"].run(row, ctx);

    expect(result).toEqual({ defer: expect.any(Number) });
    expect(await snapshot(s, id)).toEqual(before);
    // The owner's playlist is the owner's: not closed from here.
    expect(readFileSync(join(s.files.hlsDir(id), "index.m3u8"), "utf8")).not.toContain("#EXT-X-ENDLIST");
  });

  test("a dead owner and no recording: the open playlist is closed, ENDED without a recording, the lease released, the files' removal queued", async () => {
    const s = await openStack();
    const { id } = await streamOnAir(s);
    await ownerDied(s, id);
    const playlist = writeOpenPlaylist(s, id);
    expect(existsSync(s.files.flvPath(id))).toBe(false);
    const [lapsed] = await leaseRows(s, id);

    const t0 = Date.now();
    const result = await s.handlers["live-finalize"].run(await openRow(s, id, "live-finalize"), ctx);
    const t1 = Date.now();

    expect(result).toBeUndefined();
    const text = readFileSync(playlist, "utf8");
    expect(text.endsWith("#EXT-X-ENDLIST\n")).toBe(true);
    expect(text.match(/#EXT-X-ENDLIST/g)).toHaveLength(1);
    const stream = await s.runtime.get("livestream", id);
    expect(stream!.status).toBe("ENDED");
    expect(stream!.value).toBe("ended");
    expect(stream!.context.recording).toBeNull();
    expect(stream!.context.durationSeconds).toBeNull();
    // Resumed after its owner died: it ended when the owner stopped renewing its lease, not when this process noticed.
    expect(stream!.context.endedAt).toBe(new Date(lapsed!.leaseUntil).toISOString());
    const events = await eventsOf(s, id);
    expect(events.filter((e) => e === "LIVESTREAM_ENDED")).toHaveLength(1);
    expect(events).not.toContain("LIVESTREAM_RECORDING_READY");
    expect(await leaseRows(s, id)).toEqual([]);
    expect(await recordings(s)).toEqual([]);
    const removal = await openRow(s, id, "live-files-remove");
    expect(removal.status).toBe("queued");
    expect(removal.runAfter).toBeGreaterThanOrEqual(t0 + RETENTION_MS);
    expect(removal.runAfter).toBeLessThanOrEqual(t1 + RETENTION_MS);
  });

  test("run again after a crash after its commit: no second LIVESTREAM_ENDED, no second removal, the playlist closed once", async () => {
    const s = await openStack();
    const { id } = await streamOnAir(s);
    await ownerDied(s, id);
    const playlist = writeOpenPlaylist(s, id);
    const row = await openRow(s, id, "live-finalize");

    await s.handlers["live-finalize"].run(row, ctx);
    const after = await s.runtime.get("livestream", id);
    // The same row again: its lease lapsed with the crashed process and it was claimed anew.
    await s.handlers["live-finalize"].run(row, ctx);

    const again = await s.runtime.get("livestream", id);
    expect(again!.value).toBe("ended");
    expect(again!.version).toBe(after!.version);
    expect((await eventsOf(s, id)).filter((e) => e === "LIVESTREAM_ENDED")).toHaveLength(1);
    expect((await workRows(s, id, "live-files-remove")).filter((r) => r.status === "queued")).toHaveLength(1);
    expect(readFileSync(playlist, "utf8").match(/#EXT-X-ENDLIST/g)).toHaveLength(1);
    expect(await recordings(s)).toEqual([]);
  });

  test("a dead owner's recording on disk: one LIVESTREAM_RECORDING video with its transcode, in the transaction of ENDED; RECORDING_READY once, also when run twice", async () => {
    const s = await openStack();
    const { id, streamKey } = await streamOnAir(s);
    await ownerDied(s, id);
    const flv = placeRecording(s, id);
    const row = await openRow(s, id, "live-finalize");

    expect(await s.handlers["live-finalize"].run(row, ctx)).toBeUndefined();

    const stream = await s.runtime.get("livestream", id);
    expect(stream!.status).toBe("ENDED");
    expect(stream!.value).toBe("recorded");
    const videos = await recordings(s);
    expect(videos).toHaveLength(1);
    const video = videos[0]!;
    expect(video.context).toMatchObject({ kind: "LIVESTREAM_RECORDING", orgId: s.org.id, title: "On air", stream: { id, stream_key: streamKey } });
    expect(stream!.context.recording).toMatchObject({ asset_id: video.id, transcoding: true, width: 640, height: 360, resolution: "640x360", duration_seconds: 6 });
    const transcode = await openRow(s, video.id, "transcode");
    expect(transcode.payload).toEqual({ sourcePath: flv });
    const events = await eventsOf(s, id);
    expect(events.filter((e) => e === "LIVESTREAM_ENDED")).toHaveLength(1);
    expect(events.filter((e) => e === "LIVESTREAM_RECORDING_READY")).toHaveLength(1);
    expect(await leaseRows(s, id)).toEqual([]);

    // As after a crash after the commit: the recording is not registered twice, nothing is announced twice.
    await s.handlers["live-finalize"].run(row, ctx);
    expect((await recordings(s)).map((v) => v.id)).toEqual([video.id]);
    expect(await workRows(s, video.id, "transcode")).toHaveLength(1);
    const twice = await eventsOf(s, id);
    expect(twice.filter((e) => e === "LIVESTREAM_ENDED")).toHaveLength(1);
    expect(twice.filter((e) => e === "LIVESTREAM_RECORDING_READY")).toHaveLength(1);
    expect((await s.runtime.get("livestream", id))!.context.recording!.asset_id).toBe(video.id);
  });

  test("the recording's registration failing rolls ENDED back too (both or neither); the next run does both", async () => {
    const s = await openStack();
    const { id } = await streamOnAir(s);
    await ownerDied(s, id);
    placeRecording(s, id);
    const row = await openRow(s, id, "live-finalize");
    // A real failure inside the transaction: the recording's transcode row cannot be written.
    await s.database.write((tx) => tx.run(sql`CREATE TRIGGER refuse_transcode BEFORE INSERT ON work WHEN NEW.type = 'transcode' BEGIN SELECT RAISE(ABORT, 'injected: no transcode'); END`));
    const before = await snapshot(s, id);

    const err = await s.handlers["live-finalize"].run(row, ctx).then(
      () => null,
      (e: Error & { cause?: Error }) => e,
    );
    expect(String(err?.cause?.message ?? err?.message)).toContain("injected: no transcode");

    expect(await snapshot(s, id)).toEqual(before);
    expect(before.stream.value).toEqual({ live: "finalizing" });
    expect(before.lease).toHaveLength(1);

    await s.database.write((tx) => tx.run(sql`DROP TRIGGER refuse_transcode`));
    await s.handlers["live-finalize"].run(row, ctx);
    const stream = await s.runtime.get("livestream", id);
    expect(stream!.value).toBe("recorded");
    const videos = await recordings(s);
    expect(videos).toHaveLength(1);
    expect(stream!.context.recording!.asset_id).toBe(videos[0]!.id);
    const events = await eventsOf(s, id);
    expect(events.filter((e) => e === "LIVESTREAM_ENDED")).toHaveLength(1);
    expect(events.filter((e) => e === "LIVESTREAM_RECORDING_READY")).toHaveLength(1);
  });
});

describe("a finalization runs where the broadcast's lease is held (the ledger's lease affinity, no poller)", () => {
  test("queued by a process that does not hold the broadcast: not claimable there (nor a reason to wake), claimed by the holder at once; anyone's once the lease lapsed", async () => {
    const s = await openStack();
    const { id } = await streamOnAir(s);
    await foreignLease(s, id, LEASE_MS);
    // POST /end/ answered here while proc-elsewhere owns the broadcast: the finalization is queued, due now.
    await s.runtime.send("livestream", id, { type: "END_REQUESTED", at: new Date().toISOString(), durationSeconds: 5 });
    const row = await openRow(s, id, "live-finalize");
    expect(row.runAfter).toBeLessThanOrEqual(Date.now());

    expect(await s.ledger.claim("live-finalize")).toBeNull();
    const due = await s.ledger.nextDue();
    expect(due === null || due > Date.now()).toBe(true);

    // The holder's ledger (same database, the lease's holder id) claims it.
    const owner = createWorkLedger({ database: s.database, holder: "proc-elsewhere", leaseMs: 60_000, work: serviceWork(loadConfig({ DATA_DIR: s.dataDir })) });
    expect((await owner.nextDue())!).toBeLessThanOrEqual(Date.now());
    const claimed = await owner.claim("live-finalize");
    expect(claimed).toMatchObject({ id: row.id, claimedBy: "proc-elsewhere" });

    // Its lease lapsed (it died) and its claim too: the row is anyone's.
    await s.database.write((tx) =>
      tx
        .update(broadcasts)
        .set({ leaseUntil: Date.now() - 1 })
        .where(eq(broadcasts.streamId, id)),
    );
    await s.database.write((tx) =>
      tx
        .update(work)
        .set({ leaseUntil: Date.now() - 1 })
        .where(eq(work.id, row.id)),
    );
    expect(await s.ledger.claim("live-finalize")).toMatchObject({ id: row.id, claimedBy: "proc-here", attempts: 2 });
  });
});

describe("live-watch", () => {
  test("the owner's lease is alive: deferred until it would lapse, the stream untouched", async () => {
    const s = await openStack();
    const { id } = await streamOnAir(s);
    await foreignLease(s, id, LEASE_MS);
    const before = await snapshot(s, id);

    const result = await s.handlers["live-watch"].run({ payload: { streamId: id } } as WorkRow<"live-watch">, ctx);

    expect(result).toEqual({ defer: expect.any(Number) });
    expect((result as { defer: number }).defer).toBeGreaterThan(0);
    expect(await snapshot(s, id)).toEqual(before);
  });

  test("the owner's lease lapsed: BROADCAST_LOST, the stream waits its reconnect window (still LIVE, watched), then finalizing with its live-finalize queued", async () => {
    const s = await openStack();
    const { id } = await streamOnAir(s);
    await foreignLease(s, id, -1_000, "proc-dead");
    expect(await workRows(s, id, "live-finalize")).toEqual([]);

    const result = await s.handlers["live-watch"].run({ payload: { streamId: id } } as WorkRow<"live-watch">, ctx);

    // Issue 26: the encoder may come back to any process, which takes the broadcast over; the watch goes on meanwhile.
    expect(result).toEqual({ defer: expect.any(Number) });
    expect((await s.runtime.get("livestream", id))!.value).toEqual({ live: "waiting" });
    expect(await workRows(s, id, "live-finalize")).toEqual([]);
    await reconnectWindowEnds(s, id);
    const stream = await s.runtime.get("livestream", id);
    expect(stream!.value).toEqual({ live: "finalizing" });
    const finalize = await openRow(s, id, "live-finalize");
    expect(finalize.payload).toEqual({ streamId: id, trigger: "pipeline" });
    // The lease stays until the finalization's own transaction releases it.
    expect(await leaseRows(s, id)).toHaveLength(1);
  });

  test("no lease row (already finalized): done, nothing changed", async () => {
    const s = await openStack();
    const { id } = await streamOnAir(s);
    const before = await snapshot(s, id);

    const result = await s.handlers["live-watch"].run({ payload: { streamId: id } } as WorkRow<"live-watch">, ctx);

    expect(result).toBeUndefined();
    expect(await snapshot(s, id)).toEqual(before);
  });
});

describe("ingest authorize", () => {
  function publishRequest(s: Stack, streamKey: string): PublishRequest {
    const sig = new URL(s.urls.rtmpUrl(streamKey)).searchParams.get("sig")!;
    expect(s.urls.verifySignature(streamKey, sig)).toBe(true);
    return {
      app: "live",
      streamKey,
      query: new URLSearchParams({ sig }),
      publishType: "live",
      remoteAddress: "127.0.0.1",
      raw: { app: "live", name: `${streamKey}?sig=${sig}`, tcUrl: "rtmp://localhost/live" },
    };
  }

  test(`another process holds the broadcast, lease alive: refused with "Another encoder", the stream unchanged`, async () => {
    const s = await openStack();
    const created = await s.livestreams.create(s.org, { title: "Taken" });
    const id = created.id;
    await foreignLease(s, id, LEASE_MS);
    const before = await snapshot(s, id);
    expect(before.stream.value).toEqual({ ready: "idle" });

    const result = await s.ingest.handlers.authorize(publishRequest(s, created.context.streamKey));

    expect(result).toEqual({ ok: false, reason: "Another encoder is already publishing to this stream." });
    expect(await snapshot(s, id)).toEqual(before);
    expect(await workRows(s, id, "live-watch")).toEqual([]);
    expect(s.ingest.local(id)).toBeUndefined();
    expect(s.ingest.held()).toEqual([]);
  });

  test("the lease of a process that died (lapsed): taken over; the lease ours, watched, the dead owner's recording continued (not restarted) and its playlist kept", async () => {
    const s = await openStack();
    const { id, streamKey } = await streamOnAir(s);
    await foreignLease(s, id, -1_000, "proc-dead");
    expect((await s.runtime.send("livestream", id, { type: "BROADCAST_LOST" }))!.record.value).toEqual({ live: "waiting" });
    const flv = placeRecording(s, id);
    const size = statSync(flv).size;
    const playlist = writeOpenPlaylist(s, id);
    const text = readFileSync(playlist, "utf8");

    const result = await s.ingest.handlers.authorize(publishRequest(s, streamKey));

    expect(result.ok).toBe(true);
    expect((await leaseRows(s, id)).map((l) => l.claimedBy)).toEqual(["proc-here"]);
    expect((await s.runtime.get("livestream", id))!.value).toEqual({ live: "publishing" });
    expect((await openRow(s, id, "live-watch")).runAfter).toBeGreaterThan(Date.now());
    expect(s.ingest.held()).toEqual([id]);
    // Nothing of the dead owner's was overwritten: the FLV is appended to from its end, the playlist not rewritten yet.
    expect(statSync(flv).size).toBe(size);
    expect(readFileSync(playlist, "utf8")).toBe(text);
    await s.ingest.stop();
    expect(statSync(flv).size).toBe(size);
  });
});

describe("live-finalize with STORAGE=s3 (a real s3rver bucket)", () => {
  let s3: S3Server;
  const started = startS3rver().then((server) => (s3 = server));
  afterAll(async () => {
    await started;
    await s3.stop();
  });

  // An LL-HLS playlist left open: its preload hint names a part that will never come.
  const OPEN_PLAYLIST = '#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:2.000,\nsegment-0.m4s\n#EXT-X-PART:DURATION=0.334,URI="part-1-0.m4s",INDEPENDENT=YES\n';
  const HINT = '#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-1-1.m4s"\n';
  const objectText = (s: Stack, key: string) => new Response(s.objects.body(key)).text();

  test("the owner's FLV is uploaded to recordings/<stream>.flv and removed from this disk before the commit that registers the recording", async () => {
    await started;
    const s = await openStack({ s3 });
    const { id } = await streamOnAir(s);
    await ownerDied(s, id);
    const flv = placeRecording(s, id);

    expect(await s.handlers["live-finalize"].run(await openRow(s, id, "live-finalize"), ctx)).toBeUndefined();

    expect(existsSync(flv)).toBe(false);
    expect((await s.objects.stat(`recordings/${id}.flv`))?.size).toBe(readFileSync(FLV_FIXTURE).length);
    const videos = await recordings(s);
    expect(videos).toHaveLength(1);
    // The transcode names the DATA_DIR path; a process without the file takes it from the store (its key).
    expect((await openRow(s, videos[0]!.id, "transcode")).payload).toEqual({ sourcePath: flv });
    expect((await s.runtime.get("livestream", id))!.context.recording).toMatchObject({ asset_id: videos[0]!.id, width: 640, height: 360, duration_seconds: 6 });
  });

  test("an attempt that uploaded the FLV died before its commit: the next one probes the bucket's copy and registers the recording", async () => {
    await started;
    const s = await openStack({ s3 });
    const { id } = await streamOnAir(s);
    await ownerDied(s, id);
    await s.objects.putFile(`recordings/${id}.flv`, FLV_FIXTURE);
    expect(existsSync(s.files.flvPath(id))).toBe(false);

    await s.handlers["live-finalize"].run(await openRow(s, id, "live-finalize"), ctx);

    const stream = await s.runtime.get("livestream", id);
    expect(stream!.value).toBe("recorded");
    expect(stream!.context.recording).toMatchObject({ width: 640, height: 360, duration_seconds: 6 });
    expect(await recordings(s)).toHaveLength(1);
  });

  test("a dead owner on another machine: its playlist in the bucket gets its ENDLIST (its LL-HLS preload hint dropped), the stream ends without a recording; live-files-remove empties live/<token>/", async () => {
    await started;
    const s = await openStack({ s3 });
    const { id } = await streamOnAir(s);
    await ownerDied(s, id);
    const prefix = s.files.hlsPrefix(id);
    await s.objects.putBytes(`${prefix}/segment-0.m4s`, new Uint8Array(188));
    await s.objects.putBytes(`${prefix}/index.m3u8`, OPEN_PLAYLIST + HINT);

    const row = await openRow(s, id, "live-finalize");
    await s.handlers["live-finalize"].run(row, ctx);

    const text = await objectText(s, `${prefix}/index.m3u8`);
    expect(text).toBe(`${OPEN_PLAYLIST}#EXT-X-ENDLIST\n`);
    const stream = await s.runtime.get("livestream", id);
    expect(stream!.status).toBe("ENDED");
    expect(stream!.context.recording).toBeNull();
    expect(await recordings(s)).toEqual([]);
    // Run twice (a crash after the commit): ENDLIST once.
    await s.handlers["live-finalize"].run(row, ctx);
    expect((await objectText(s, `${prefix}/index.m3u8`)).match(/#EXT-X-ENDLIST/g)).toHaveLength(1);

    await s.handlers["live-files-remove"].run(await openRow(s, id, "live-files-remove"), ctx);
    const left: string[] = [];
    for await (const o of s.objects.list(prefix)) left.push(o.key);
    expect(left).toEqual([]);
    expect(existsSync(join(s.dataDir, "live"))).toBe(false);
  });
});
