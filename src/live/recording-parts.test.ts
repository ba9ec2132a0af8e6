import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFlvTags } from "../../media/flv/flv-reader.ts";
import { FIXTURE_PATH, fixtureTags } from "../../media/rtmp/test-support.ts";
import { type S3Server, startS3rver } from "../../test/support/s3rver.ts";
import { loadConfig } from "../config.ts";
import { createLogger } from "../log.ts";
import { loadServerSecret } from "../secrets/server-secret.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { createS3ObjectStore } from "../storage/s3-object-store.ts";
import { createBroadcast } from "./broadcast.ts";
import { createLiveFiles } from "./live-files.ts";
import { createLiveUrls } from "./live-urls.ts";
import { assembleParts, createPartUploader, partKey } from "./recording-parts.ts";
import { probeRecording } from "./recording-probe.ts";

setDefaultTimeout(120_000);

/**
 * The FLV's parts with STORAGE=s3, on a real s3rver bucket: the uploader
 * sends consecutive byte ranges of a growing file (cut anywhere, mid-tag
 * too), and their concatenation is the file; the finalizer's side rebuilds
 * a dead owner's recording from them and deletes them (only this stream's).
 */

let s3: S3Server;
let objects: ObjectStore;
let dir: string;
const logger = createLogger({ level: "silent" });
const fixture = new Uint8Array(readFileSync(FIXTURE_PATH));

beforeAll(async () => {
  s3 = await startS3rver();
  objects = createS3ObjectStore({ endpoint: s3.endpoint, bucket: s3.bucket, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" });
  dir = mkdtempSync(join(tmpdir(), "recording-parts-"));
});
afterAll(async () => {
  await s3.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function keys(prefix: string): Promise<{ key: string; size: number }[]> {
  const out: { key: string; size: number }[] = [];
  for await (const o of objects.list(prefix)) out.push({ key: o.key, size: o.size });
  return out;
}

describe("part uploader", () => {
  test("each flush uploads the bytes since the last offset as the next numbered part; nothing new, no part; the parts concatenate to the file", async () => {
    const path = join(dir, "growing.flv");
    writeFileSync(path, fixture.subarray(0, 1000));
    const up = createPartUploader({ streamId: "str_grow", path, objects, intervalMs: 60_000, logger });
    await up.flush();
    expect(up.offset).toBe(1000);
    await up.flush(); // no new bytes: no part
    // Cut points anywhere (mid-tag), uneven sizes.
    for (const end of [1001, 70_000, 333_333, fixture.length]) {
      appendFileSync(path, fixture.subarray(up.offset, end));
      await up.flush();
      expect(up.offset).toBe(end);
    }
    await up.stop({ rest: true }); // nothing left: still no empty part
    const stored = await keys("recordings/str_grow");
    expect(stored.map((o) => o.key)).toEqual([1, 2, 3, 4, 5].map((n) => partKey("str_grow", n)));
    expect(stored.map((o) => o.size)).toEqual([1000, 1, 68_999, 263_333, fixture.length - 333_333]);
    expect(up.stats).toMatchObject({ parts: 5, bytes: fixture.length });

    const rebuilt = join(dir, "rebuilt.flv");
    expect(await assembleParts(objects, "str_grow", rebuilt)).toEqual({ parts: 5, bytes: fixture.length });
    expect(Buffer.compare(readFileSync(rebuilt), Buffer.from(fixture))).toBe(0);
    expect(existsSync(`${rebuilt}.assembling`)).toBe(false);
  });

  test("on its ticks, sequential: a large backlog goes as several parts of at most maxPartBytes; stop({ rest }) sends the tail", async () => {
    const path = join(dir, "ticks.flv");
    writeFileSync(path, fixture.subarray(0, 200_000));
    const up = createPartUploader({ streamId: "str_ticks", path, objects, intervalMs: 20, logger, maxPartBytes: 64 * 1024 });
    up.start();
    const until = Date.now() + 10_000;
    while (up.offset < 200_000 && Date.now() < until) await Bun.sleep(10);
    expect(up.offset).toBe(200_000);
    // Written after the last tick's look: only the stop's final upload sends it.
    appendFileSync(path, fixture.subarray(200_000));
    await up.stop({ rest: true });
    expect(up.offset).toBe(fixture.length);
    const stored = await keys("recordings/str_ticks");
    expect(stored.every((o) => o.size <= 64 * 1024)).toBe(true);
    expect(stored.map((o) => o.key)).toEqual(stored.map((_, i) => partKey("str_ticks", i + 1)));
    const rebuilt = join(dir, "ticks-rebuilt.flv");
    await assembleParts(objects, "str_ticks", rebuilt);
    expect(Buffer.compare(readFileSync(rebuilt), Buffer.from(fixture))).toBe(0);
  });

  test("a file cut mid-tag (the parts of a process killed on air) probes as media up to its last whole tag", async () => {
    const path = join(dir, "cut.flv");
    writeFileSync(path, fixture.subarray(0, 300_001));
    const probe = await probeRecording(path);
    expect(probe).toMatchObject({ hasMedia: true, hasVideo: true, width: 640, height: 360 });
    expect(probe.durationSeconds).toBeGreaterThan(0);
    expect(probe.durationSeconds).toBeLessThan((await probeRecording(FIXTURE_PATH)).durationSeconds);
  });

  test("assembly stops at a missing part; no parts, no file", async () => {
    await objects.putBytes(partKey("str_gap", 1), fixture.subarray(0, 10));
    await objects.putBytes(partKey("str_gap", 2), fixture.subarray(10, 20));
    await objects.putBytes(partKey("str_gap", 4), fixture.subarray(30, 40));
    const out = join(dir, "gap.flv");
    expect(await assembleParts(objects, "str_gap", out)).toEqual({ parts: 2, bytes: 20 });
    expect(readFileSync(out).length).toBe(20);
    const none = join(dir, "none.flv");
    expect(await assembleParts(objects, "str_none", none)).toEqual({ parts: 0, bytes: 0 });
    expect(existsSync(none)).toBe(false);
  });
});

describe("a broadcast's parts", () => {
  /** A broadcast fed the fixture's first second (within the rebaser's lead: no wait), then ended. */
  async function broadcastOnce(streamId: string, uploadRest: boolean) {
    const dataDir = mkdtempSync(join(tmpdir(), "recording-parts-broadcast-"));
    const files = createLiveFiles({ dataDir, urls: createLiveUrls(loadConfig({ DATA_DIR: dataDir }), loadServerSecret(dataDir)), objects, partMs: 60_000 });
    const broadcast = createBroadcast({
      streamId,
      latency: "LOW",
      flvPath: files.flvPath(streamId),
      hlsDir: join(dataDir, "hls"),
      recordingParts: files.recordingParts(streamId, logger),
      logger,
      onSegment: () => undefined,
    });
    await broadcast.startSession();
    for (const tag of await fixtureTags()) if (tag.timestamp <= 900) await broadcast.push(tag);
    await broadcast.end({ uploadRest });
    const local = readFileSync(files.flvPath(streamId));
    const rebuilt = join(dataDir, "rebuilt.flv");
    const assembled = await assembleParts(objects, streamId, rebuilt);
    const stats = files.takePartStats(streamId);
    const bytes = assembled.parts > 0 ? readFileSync(rebuilt) : null;
    rmSync(dataDir, { recursive: true, force: true });
    return { local, assembled, stats, rebuilt: bytes };
  }

  test("a graceful stop (end with uploadRest) leaves the whole FLV in the parts; a finalize's end (without) sends nothing more", async () => {
    const stopped = await broadcastOnce("str_stopped", true);
    expect(stopped.local.length).toBeGreaterThan(10_000);
    expect(stopped.assembled.bytes).toBe(stopped.local.length);
    expect(Buffer.compare(stopped.rebuilt!, stopped.local)).toBe(0);
    expect(stopped.stats?.bytes).toBe(stopped.local.length);
    const finalized = await broadcastOnce("str_finalized", false);
    // RECORDING_PART_MS (60 s here) never came: the finalize uploads the whole file itself.
    expect(finalized.assembled.parts).toBe(0);
  });
});

describe("live files with parts (the finalizer's side)", () => {
  test("a dead owner's parts rebuild the recording, stored whole at recordings/<stream>.flv; its parts deleted, not those of a stream whose id it prefixes", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "recording-parts-files-"));
    try {
      const files = createLiveFiles({ dataDir, urls: createLiveUrls(loadConfig({ DATA_DIR: dataDir }), loadServerSecret(dataDir)), objects });
      const cut = 400_123;
      await objects.putBytes(partKey("str_dead", 1), fixture.subarray(0, 150_000));
      await objects.putBytes(partKey("str_dead", 2), fixture.subarray(150_000, cut));
      await objects.putBytes(partKey("str_dead2", 1), fixture.subarray(0, 100));
      await objects.putBytes("recordings/str_dead2.flv", fixture.subarray(0, 100));

      const probe = await files.probe("str_dead");
      expect(probe.hasMedia).toBe(true);
      expect(probe.rebuiltFrom).toEqual({ parts: 2, bytes: cut });
      await files.storeRecording("str_dead", probe.hasMedia);
      expect((await objects.stat("recordings/str_dead.flv"))?.size).toBe(cut);
      expect(existsSync(files.flvPath("str_dead"))).toBe(false);
      expect(await keys("recordings/str_dead")).toEqual([]);
      expect((await keys("recordings/str_dead2")).map((o) => o.key)).toEqual([partKey("str_dead2", 1)]);
      expect(await objects.stat("recordings/str_dead2.flv")).not.toBeNull();

      // A retry after that (the commit never happened): the bucket's copy is probed, nothing rebuilt.
      const again = await files.probe("str_dead");
      expect(again.hasMedia).toBe(true);
      expect(again.rebuiltFrom).toBeUndefined();
      expect(again.durationSeconds).toBe(probe.durationSeconds);
      await files.storeRecording("str_dead", again.hasMedia);
      expect((await objects.stat("recordings/str_dead.flv"))?.size).toBe(cut);

      // No parts, nothing local, nothing stored: no media, as before parts existed.
      expect((await files.probe("str_never")).hasMedia).toBe(false);
      expect(existsSync(files.flvPath("str_never"))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("a broadcast taken over on another machine (issue 26)", () => {
  test("the dead owner's parts (the last cut mid-tag) are continued: rebuilt here, appended after the last whole tag, its parts untouched, the next one written at that offset; all of them assemble into the new owner's file", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "recording-parts-takeover-"));
    try {
      const id = "str_taken";
      const cut = 400_123;
      await objects.putBytes(partKey(id, 1), fixture.subarray(0, 150_000));
      await objects.putBytes(partKey(id, 2), fixture.subarray(150_000, cut));
      const files = createLiveFiles({ dataDir, urls: createLiveUrls(loadConfig({ DATA_DIR: dataDir }), loadServerSecret(dataDir)), objects, partMs: 60_000 });
      const deadTags = [...readFlvTags(fixture.subarray(0, cut))];
      const broadcast = createBroadcast({
        streamId: id,
        latency: "LOW",
        flvPath: files.flvPath(id),
        hlsDir: join(dataDir, "hls"),
        recordingParts: files.recordingParts(id, logger),
        logger,
        onSegment: () => undefined,
        continuation: () => files.continuation(id),
      });
      await broadcast.startSession();
      for (const tag of await fixtureTags()) if (tag.timestamp <= 900) await broadcast.push(tag);
      await broadcast.end({ uploadRest: true });

      const parts = (await keys(`recordings/${id}`)).map((o) => o.key);
      expect(parts).toHaveLength(3);
      expect(parts.slice(0, 2)).toEqual([partKey(id, 1), partKey(id, 2)]);
      expect(parts[2]).toMatch(/\/part-000003-at-\d+\.flv$/);
      expect(Number(/-at-(\d+)/.exec(parts[2]!)![1])).toBeLessThan(cut);
      expect((await objects.stat(partKey(id, 2)))?.size).toBe(cut - 150_000);

      const local = readFileSync(files.flvPath(id));
      const rebuilt = join(dataDir, "rebuilt.flv");
      await assembleParts(objects, id, rebuilt);
      expect(Buffer.compare(readFileSync(rebuilt), local)).toBe(0);
      const all = [...readFlvTags(new Uint8Array(local))];
      const media = (tags: typeof all) => tags.filter((t) => t.type !== "data");
      const lastDead = Math.max(...media(deadTags).map((t) => t.timestamp));
      // The dead owner's whole tags first, as they were; then this process's, after them on one timeline.
      expect(all.slice(0, deadTags.length).map((t) => t.timestamp)).toEqual(deadTags.map((t) => t.timestamp));
      const added = media(all.slice(deadTags.length));
      expect(added.length).toBeGreaterThan(20);
      expect(Math.min(...added.map((t) => t.timestamp))).toBeGreaterThan(lastDead);
      const probe = await probeRecording(rebuilt);
      expect(probe.durationSeconds).toBeGreaterThan(lastDead / 1000 + 0.7);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
