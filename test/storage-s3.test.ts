import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { broadcasts, uploads } from "../src/db/schema/index.ts";
import { silentLogger } from "../src/log.ts";
import { createRetention } from "../src/retention/retention.ts";
import type { ObjectStore } from "../src/storage/object-store.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { spawnService } from "./support/service-process.ts";
import { FIXTURES, startFileServer } from "./support/file-server.ts";
import { parsePlaylist } from "./support/media-check.ts";
import { startS3rver, type S3Server } from "./support/s3rver.ts";
import { startSqld, type Sqld } from "./support/sqld.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * STORAGE=s3 end to end on a real S3-compatible server (s3rver) and a real
 * libSQL server (sqld): two services with their own DATA_DIR share the bucket,
 * the database and the secret, as two machines would.
 */
const native = await hasNativeFfmpeg();
const FIXTURE = "av-360p-2s.mp4";

let s3: S3Server;
let sqld: Sqld;
let env: Record<string, string>;
/** The video deleted by the first test (retention looks at it again). */
let deletedVideo: string | undefined;
let a: TestService;
let b: TestService;
const files = startFileServer();

beforeAll(async () => {
  if (!native) return;
  [s3, sqld] = await Promise.all([startS3rver(), startSqld()]);
  env = { ...s3.env, DATABASE_URL: sqld.url, SECRET_KEY: "storage-s3-test-secret-key-0123456789abcdef", MEDIA_BACKEND: "native", TRANSCODE_WORKERS: "1" };
  a = await startTestService({ env });
  b = await startTestService({ env, org: { orgId: a.orgId, apiKey: a.apiKey } });
}, 60_000);

afterAll(async () => {
  files.stop();
  await a?.stop();
  await b?.stop();
  await sqld?.stop();
  await s3?.stop();
});

async function keys(objects: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of objects.list(prefix)) out.push(o.key);
  return out;
}

/** Files under DATA_DIR/<folder> (recursive); [] when the folder does not exist. */
function localFiles(t: TestService, folder: string): string[] {
  const dir = join(t.dataDir, folder);
  return existsSync(dir) ? (readdirSync(dir, { recursive: true, withFileTypes: true }) as { isFile(): boolean; name: string }[]).filter((e) => e.isFile()).map((e) => e.name) : [];
}

async function settled(t: TestService, id: string) {
  return waitFor(
    async () => {
      const body = await ok(t.api(`/videos/${id}/`), "getVideo");
      return ["COMPLETED", "ERROR"].includes(body.data?.video?.status) ? body.data : undefined;
    },
    { timeoutMs: 60_000, what: `video ${id} settled` },
  );
}

/** The same path on the other service. */
const on = (t: TestService, url: string) => {
  const u = new URL(url);
  return `${t.base}${u.pathname}`;
};

describe.skipIf(!native)("STORAGE=s3", () => {
  test("a presigned upload goes straight to the bucket; media is served with ranges by either process; nothing stays on local disks; DELETE removes the objects", async () => {
    const created = await ok(a.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl");
    const slot = created.data;
    expect(slot.source_url).toBe(`${a.base}/uploads/${slot.upload_id}`);
    // A presigned S3 PUT, expiring with the slot.
    expect(slot.upload_url.startsWith(`${s3.endpoint}/${s3.bucket}/uploads/${slot.upload_id}?`)).toBe(true);
    expect(new URL(slot.upload_url).searchParams.get("X-Amz-Expires")).toBe("3600");

    // Not uploaded yet: the existing "unfinished" refusal.
    const early = await a.api("/videos/", { method: "POST", json: { source_url: slot.source_url } });
    expect(early.status).toBe(422);
    expect(JSON.stringify(await early.json())).toContain("the upload has not finished");

    const bytes = readFileSync(join(FIXTURES, FIXTURE));
    const put = await fetch(slot.upload_url, { method: "PUT", body: bytes });
    expect(put.status).toBe(200);
    expect(localFiles(a, "uploads")).toEqual([]);

    const reg = await a.api("/videos/", { method: "POST", json: { source_url: slot.source_url } });
    expect(reg.status).toBe(201);
    const id = (await ok(reg, "createVideo")).data.asset.public_id as string;
    const data = await settled(a, id);
    expect(data.video.status).toBe("COMPLETED");
    expect(data.storage!.original_bytes).toBe(String(bytes.length));

    // Master, rendition, segment through the service; the segment by range.
    const masterRes = await fetch(data.video.url!);
    expect(masterRes.status).toBe(200);
    expect(masterRes.headers.get("content-type")).toBe("application/vnd.apple.mpegurl");
    expect(masterRes.headers.get("cache-control")).toBe("public, max-age=60");
    const master = parsePlaylist(await masterRes.text());
    const renditionUrl = new URL(master.streams[0]!.uri, data.video.url!);
    const rendition = parsePlaylist(await (await fetch(renditionUrl)).text());
    const segUrl = new URL(rendition.uris[0]!, renditionUrl).href;
    const whole = new Uint8Array(await (await fetch(segUrl)).arrayBuffer());
    expect(whole.length).toBeGreaterThan(1000);
    const ranged = await fetch(segUrl, { headers: { range: "bytes=100-299" } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-range")).toBe(`bytes 100-299/${whole.length}`);
    expect(ranged.headers.get("content-length")).toBe("200");
    expect(ranged.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(new Uint8Array(await ranged.arrayBuffer())).toEqual(whole.slice(100, 300));
    expect((await fetch(segUrl, { headers: { range: `bytes=${whole.length}-` } })).status).toBe(416);

    // The download, by range, as an attachment.
    expect(data.video.download_url).toBeString();
    const dl = await fetch(data.video.download_url!, { headers: { range: "bytes=0-9" } });
    expect(dl.status).toBe(206);
    expect(dl.headers.get("content-disposition")).toStartWith("attachment;");
    expect((await dl.arrayBuffer()).byteLength).toBe(10);

    // The other process serves the same URLs from the bucket.
    const fromB = await fetch(on(b, segUrl));
    expect(fromB.status).toBe(200);
    expect(new Uint8Array(await fromB.arrayBuffer())).toEqual(whole);
    expect((await fetch(on(b, data.video.url!))).status).toBe(200);

    // Everything is in the bucket, nothing on either disk.
    const objects = a.service.objects;
    const mediaKey = a.service.store.mediaKey(id);
    expect((await keys(objects, mediaKey)).length).toBeGreaterThan(3);
    expect(await keys(objects, `originals/${id}`)).toEqual([`originals/${id}/source.bin`]);
    expect(await objects.stat(`uploads/${slot.upload_id}`)).toBeNull();
    expect(await keys(objects, `work/${id}`)).toEqual([]);
    for (const t of [a, b]) for (const folder of ["media", "originals", "uploads", "work"]) expect(localFiles(t, folder)).toEqual([]);

    // DELETE through the other process removes the objects.
    deletedVideo = id;
    expect((await b.api(`/videos/${id}/`, { method: "DELETE" })).status).toBe(200);
    expect(await keys(objects, mediaKey)).toEqual([]);
    expect(await keys(objects, `originals/${id}`)).toEqual([]);
    expect((await fetch(segUrl)).status).toBe(404);
  }, 90_000);

  test("a source_url video: fetched, stored, transcoded; the original kept in the bucket; its static renditions stored beside the ladder", async () => {
    const reg = await b.api("/videos/", { method: "POST", json: { source_url: files.url(FIXTURE), static_renditions: ["highest", "audio-only"] } });
    expect(reg.status).toBe(201);
    const id = (await ok(reg, "createVideo")).data.asset.public_id as string;
    const data = await settled(b, id);
    expect(data.video.status).toBe("COMPLETED");
    const objects = b.service.objects;
    expect(await keys(objects, `originals/${id}`)).toEqual([`originals/${id}/source.mp4`]);
    expect(await keys(objects, `work/${id}`)).toEqual([]);
    expect((await fetch(on(a, data.video.url!))).status).toBe(200);
    // Issue 27 item 4: the MP4 and the M4A are objects of the video's media prefix, served by the other process.
    const statics = data.video.static_renditions;
    expect(statics.map((s) => s.status)).toEqual(["ready", "ready"]);
    const stored = await keys(objects, `${b.service.store.mediaKey(id)}/static`);
    expect(stored.map((k) => k.split("/").pop()).sort()).toEqual(["audio.m4a", statics[0]!.url!.split("/").pop()!].sort());
    for (const s of statics) expect((await (await fetch(on(a, s.url!))).arrayBuffer()).byteLength).toBe(Number(s.bytes));
    for (const t of [a, b]) for (const folder of ["media", "originals", "uploads", "work"]) expect(localFiles(t, folder)).toEqual([]);
  }, 60_000);

  test("an uploaded object over the slot's max_bytes is deleted and refused at registration", async () => {
    const slot = (await ok(a.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl")).data;
    expect((await fetch(slot.upload_url, { method: "PUT", body: "0123456789abcdef" })).status).toBe(200);
    await a.service.database.write((tx) => tx.update(uploads).set({ maxBytes: 8 }).where(eq(uploads.id, slot.upload_id)));
    const res = await a.api("/videos/", { method: "POST", json: { source_url: slot.source_url } });
    expect(res.status).toBe(422);
    expect(JSON.stringify(await res.json())).toContain("must be at most 8 bytes");
    expect(await a.service.objects.stat(`uploads/${slot.upload_id}`)).toBeNull();
  });

  test("kill -9 after the outputs and the original are stored, before COMPLETED: another process repeats the transcode from the kept original; each event once", async () => {
    const dataDir = `${a.dataDir}-crash`;
    const c = await spawnService({ ...env, DATA_DIR: dataDir, JOB_LEASE_MS: "1500", VIDLIVE_FAULT: "transcode:after-store" }, { orgId: a.orgId, apiKey: a.apiKey });
    try {
      const slot = (await ok(c.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl")).data;
      expect((await fetch(slot.upload_url, { method: "PUT", body: readFileSync(join(FIXTURES, FIXTURE)) })).status).toBe(200);
      // a and b take part in the claims too: stopped from claiming, only c runs this transcode first.
      await a.service.runner.stop();
      await b.service.runner.stop();
      const reg = await c.api("/videos/", { method: "POST", json: { source_url: slot.source_url } });
      expect(reg.status).toBe(201);
      const id = (await ok(reg, "createVideo")).data.asset.public_id as string;
      await c.proc.exited;
      expect(c.proc.signalCode).toBe("SIGKILL");
      // The upload was consumed, the original kept: the repeat has only the bucket's original to go on.
      expect(await a.service.objects.stat(`uploads/${slot.upload_id}`)).toBeNull();
      expect(await keys(a.service.objects, `originals/${id}`)).toEqual([`originals/${id}/source.bin`]);
      a.service.runner.start();
      const data = await settled(a, id);
      expect(data.video.status).toBe("COMPLETED");
      expect((await fetch(on(b, data.video.url!))).status).toBe(200);
      const events = (await outboxEvents(a.service, id)).map((e) => e.event);
      expect(events).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
      expect(await keys(a.service.objects, `originals/${id}`)).toEqual([`originals/${id}/source.bin`]);
    } finally {
      await c.stop();
      a.service.runner.start();
      b.service.runner.start();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test("retention removes what rows no longer need from the bucket: expired uploads, work and recordings nothing uses, a deleted video's recreated original", async () => {
    const objects = a.service.objects;
    const now = Date.now();
    const DAY = 86_400_000;
    await a.service.database.write((tx) => tx.insert(uploads).values({ id: "upl_expiredS3", orgId: a.orgId, status: "pending", expiresAt: now - 3 * DAY, maxBytes: 100, createdAt: now - 3 * DAY }));
    await objects.putBytes("uploads/upl_expiredS3", "left by a presigned PUT");
    await objects.putBytes("work/vid_goneS3/source.mp4", "a fetched source whose video is gone");
    await objects.putBytes("recordings/str_goneS3.flv", "FLV");
    // Parts uploaded while on air (src/live/recording-parts.ts): a gone stream's go; those of a stream on air whose id
    // starts with the same characters stay.
    await objects.putBytes("recordings/str_goneS3/part-000001.flv", "FL");
    await objects.putBytes("recordings/str_goneS3/part-000002.flv", "V");
    await objects.putBytes("recordings/str_goneS3b/part-000001.flv", "FLV");
    await a.service.database.write((tx) => tx.insert(broadcasts).values({ streamId: "str_goneS3b", orgId: a.orgId, claimedBy: "elsewhere", leaseUntil: now + 32 * DAY, startedAt: now }));
    // A run that outlived its video's deletion recreated the original.
    expect(deletedVideo).toBeString();
    await objects.putBytes(`originals/${deletedVideo}/source.bin`, "late");
    const retention = createRetention({ database: a.service.database, config: a.service.config, logger: silentLogger, objects, removeMedia: (vid) => a.service.store.remove(vid) });
    // Far enough ahead that the deleted video's period (30 days) and the files' grace are over.
    const report = await retention.sweep(now + 31 * DAY);
    expect(report.upload_files).toBeGreaterThanOrEqual(1);
    expect(report.work_dirs).toBeGreaterThanOrEqual(1);
    expect(report.recordings).toBeGreaterThanOrEqual(1);
    expect(report.video_dirs).toBeGreaterThanOrEqual(1);
    expect(await objects.stat("uploads/upl_expiredS3")).toBeNull();
    expect(await keys(objects, "work/vid_goneS3")).toEqual([]);
    expect(await objects.stat("recordings/str_goneS3.flv")).toBeNull();
    expect(await keys(objects, "recordings/str_goneS3")).toEqual([]);
    expect(await keys(objects, "recordings/str_goneS3b")).toEqual(["recordings/str_goneS3b/part-000001.flv"]);
    await a.service.database.write((tx) => tx.delete(broadcasts).where(eq(broadcasts.streamId, "str_goneS3b")));
    await objects.deletePrefix("recordings/str_goneS3b");
    expect(await keys(objects, `originals/${deletedVideo}`)).toEqual([]);
  });
});
