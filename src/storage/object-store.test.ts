import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startS3rver, type S3Server } from "../../test/support/s3rver.ts";
import { createLocalObjectStore } from "./local-object-store.ts";
import type { ObjectStore } from "./object-store.ts";
import { createS3ObjectStore } from "./s3-object-store.ts";

setDefaultTimeout(120_000);

/** Reads a body (Blob or stream) to text. */
const text = (b: Blob | ReadableStream<Uint8Array>) => new Response(b).text();

async function keys(store: ObjectStore, prefix: string) {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

let s3: S3Server;
const scratch = mkdtempSync(join(tmpdir(), "vidlive-objstore-"));
let n = 0;
/** A fresh local file to hand to the store. */
function localFile(content: string | Uint8Array) {
  const path = join(scratch, `f${n++}`);
  writeFileSync(path, content);
  return path;
}

beforeAll(async () => {
  s3 = await startS3rver("contract");
});
afterAll(async () => {
  await s3.stop();
  rmSync(scratch, { recursive: true, force: true });
});

// One contract, two implementations: what passes for one must pass for the other.
const impls: Array<[string, () => ObjectStore]> = [
  ["local", () => createLocalObjectStore(mkdtempSync(join(scratch, "data-")))],
  // A page of 3 keys so that a handful of objects exercises the listing's pagination.
  ["s3", () => createS3ObjectStore({ endpoint: s3.endpoint, bucket: s3.bucket, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" }, { pageSize: 3 })],
];

describe.each(impls)("ObjectStore contract: %s", (kind, make) => {
  let store: ObjectStore;
  let ns: string;
  let i = 0;
  beforeAll(() => {
    store = make();
  });
  // Each test writes under its own prefix: the s3 bucket is shared by the tests.
  const k = (rel: string) => `${ns}/${rel}`;
  const fresh = () => {
    ns = `t${kind}${i++}`;
  };

  test("kind and localPath", () => {
    fresh();
    expect(store.kind).toBe(kind as "local" | "s3");
    if (kind === "local") expect(store.localPath(k("a/b.txt"))).toEndWith(`${ns}/a/b.txt`);
    else expect(store.localPath(k("a/b.txt"))).toBeNull();
  });

  test("putBytes, stat, body whole and by range", async () => {
    fresh();
    await store.putBytes(k("x.txt"), "0123456789");
    const st = await store.stat(k("x.txt"));
    expect(st?.size).toBe(10);
    expect(st!.lastModified).toBeGreaterThan(Date.now() - 60_000);
    expect(await text(store.body(k("x.txt")))).toBe("0123456789");
    expect(await text(store.body(k("x.txt"), { start: 2, end: 5 }))).toBe("234");
    expect(await text(store.body(k("x.txt"), { start: 9, end: 10 }))).toBe("9");
    await store.putBytes(k("bin"), new Uint8Array([1, 2, 3]));
    expect((await store.stat(k("bin")))?.size).toBe(3);
  });

  test("stat of a missing key is null; download of a missing key is false", async () => {
    fresh();
    expect(await store.stat(k("nope"))).toBeNull();
    const dest = join(scratch, `dl-missing-${kind}`);
    expect(await store.download(k("nope"), dest)).toBe(false);
    expect(existsSync(dest)).toBe(false);
  });

  test("putFile copies, or moves with move", async () => {
    fresh();
    const a = localFile("copied");
    await store.putFile(k("a.mp4"), a);
    expect(existsSync(a)).toBe(true);
    expect(await text(store.body(k("a.mp4")))).toBe("copied");
    const b = localFile("moved");
    await store.putFile(k("b.mp4"), b, { move: true });
    expect(existsSync(b)).toBe(false);
    expect(await text(store.body(k("b.mp4")))).toBe("moved");
    // Overwrite.
    await store.putFile(k("b.mp4"), localFile("again"), { move: true });
    expect(await text(store.body(k("b.mp4")))).toBe("again");
  });

  test("putFile of a file already at its key's path is a no-op (local)", async () => {
    fresh();
    await store.putBytes(k("in/place.flv"), "here");
    const at = store.localPath(k("in/place.flv"));
    if (!at) return; // s3: no local path
    await store.putFile(k("in/place.flv"), at, { move: true });
    expect(existsSync(at)).toBe(true);
    expect(await text(store.body(k("in/place.flv")))).toBe("here");
  });

  test("download copies the object to a local file", async () => {
    fresh();
    const data = new Uint8Array(300_000).map((_, j) => j % 251);
    await store.putBytes(k("big.bin"), data);
    const dest = join(scratch, `dl-${kind}`, "nested", "big.bin");
    expect(await store.download(k("big.bin"), dest)).toBe(true);
    expect(new Uint8Array(await Bun.file(dest).arrayBuffer())).toEqual(data);
  });

  test("putDir stores a tree; list is recursive, in key order, paginated", async () => {
    fresh();
    const dir = mkdtempSync(join(scratch, "tree-"));
    mkdirSync(join(dir, "720p"));
    mkdirSync(join(dir, "downloads"));
    writeFileSync(join(dir, "master.m3u8"), "#EXTM3U\n");
    writeFileSync(join(dir, "720p", "index.m3u8"), "#EXTM3U\n#720\n");
    writeFileSync(join(dir, "720p", "seg0.ts"), "aaaa");
    writeFileSync(join(dir, "720p", "seg1.ts"), "bbbbb");
    writeFileSync(join(dir, "poster.jpg"), "c");
    writeFileSync(join(dir, "downloads", "720p.mp4"), "mp4");
    const res = await store.putDir(k("media/tok"), dir, { move: true });
    expect(res).toEqual({ files: 6, bytes: 8 + 13 + 4 + 5 + 1 + 3 });
    expect(existsSync(dir)).toBe(false);
    const listed = await keys(store, k("media/tok"));
    const want = ["720p/index.m3u8", "720p/seg0.ts", "720p/seg1.ts", "downloads/720p.mp4", "master.m3u8", "poster.jpg"].map((r) => k(`media/tok/${r}`));
    expect(listed).toEqual(want);
    const sizes: number[] = [];
    for await (const o of store.list(k("media/tok/720p"))) sizes.push(o.size);
    expect(sizes).toEqual([13, 4, 5]);
    // A prefix is a folder: `media/to` does not list `media/tok/…`.
    expect(await keys(store, k("media/to"))).toEqual([]);
    expect(await keys(store, k("nothing"))).toEqual([]);
  });

  test("putDir without move leaves the folder", async () => {
    fresh();
    const dir = mkdtempSync(join(scratch, "tree-"));
    writeFileSync(join(dir, "a"), "1");
    expect(await store.putDir(k("p"), dir)).toEqual({ files: 1, bytes: 1 });
    expect(existsSync(join(dir, "a"))).toBe(true);
  });

  test("delete and deletePrefix", async () => {
    fresh();
    for (let j = 0; j < 7; j++) await store.putBytes(k(`d/${j}.ts`), "x");
    await store.putBytes(k("d-keep"), "x");
    await store.putBytes(k("e/keep"), "x");
    await store.delete(k("d/0.ts"));
    await store.delete(k("d/0.ts")); // missing: no error
    expect(await store.stat(k("d/0.ts"))).toBeNull();
    expect(await store.deletePrefix(k("d"))).toBe(6);
    expect(await keys(store, k("d"))).toEqual([]);
    expect(await store.stat(k("d-keep"))).not.toBeNull();
    expect(await store.stat(k("e/keep"))).not.toBeNull();
    expect(await store.deletePrefix(k("d"))).toBe(0);
  });

  test("keys that leave the store are refused", async () => {
    fresh();
    expect(() => store.body("../etc/passwd")).toThrow();
    await expect(store.putBytes(`${ns}/../../x`, "x")).rejects.toThrow();
  });

  test("presignPut: a PUT URL straight to the bucket (s3), none (local)", async () => {
    fresh();
    const url = store.presignPut(k("uploads/upl_1"), { expiresInSeconds: 60 });
    if (kind === "local") {
      expect(url).toBeNull();
      return;
    }
    const res = await fetch(url!, { method: "PUT", body: "uploaded bytes" });
    expect(res.status).toBe(200);
    expect(await text(store.body(k("uploads/upl_1")))).toBe("uploaded bytes");
  });
});
