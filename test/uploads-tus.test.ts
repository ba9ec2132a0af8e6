import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { existsSync, readFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { uploads } from "../src/db/schema/index.ts";
import { silentLogger } from "../src/log.ts";
import { createRetention } from "../src/retention/retention.ts";
import { tusToken } from "../src/videos/tus-token.ts";
import { until, waitFor } from "./support/events.ts";
import { FIXTURES } from "./support/file-server.ts";
import { startS3rver } from "./support/s3rver.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * Resumable uploads (tus 1.0) at /api/public/v1/videos/uploads/, over raw
 * HTTP so each step a tus client takes is visible: create, append, a
 * connection cut in the middle of a PATCH (a raw socket closed after part of
 * the body), HEAD for the offset, resume, and the finished file registered
 * with POST /videos/ like a presigned upload's.
 */
const MAX = 1024 * 1024;
const FILE = readFileSync(join(FIXTURES, "av-360p-2s.mp4"));
let t: TestService;

beforeAll(async () => {
  t = await startTestService({ env: { MEDIA_BACKEND: "native", UPLOAD_MAX_BYTES: String(MAX), UPLOAD_CONCURRENT_PER_ORG: "3" } });
});
afterAll(async () => {
  await t?.stop();
});

const endpoint = () => `${t.base}/api/public/v1/videos/uploads/`;
const TUS = { "Tus-Resumable": "1.0.0" };

function tus(url: string, init: { method: string; key?: string | null; headers?: Record<string, string>; body?: Uint8Array }) {
  const headers: Record<string, string> = { ...TUS, ...init.headers };
  const key = init.key === undefined ? t.apiKey : init.key;
  if (key) headers.authorization = `Bearer ${key}`;
  return fetch(url, { method: init.method, headers, body: init.body });
}

const create = (length: number, key?: string | null, url = endpoint()) =>
  tus(url, { method: "POST", key, headers: { "Upload-Length": String(length), "Upload-Metadata": `filename ${btoa("clip.mp4")}` } });
const patch = (url: string, offset: number, body: Uint8Array, key?: string | null) =>
  tus(url, { method: "PATCH", key, headers: { "Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream" }, body });
const offsetOf = async (url: string, key?: string | null) => {
  const res = await tus(url, { method: "HEAD", key });
  return { status: res.status, offset: Number(res.headers.get("upload-offset")), length: Number(res.headers.get("upload-length")) };
};

/** A PATCH whose connection is closed after `sent` of the body's bytes: what a dropped network does to an upload. */
async function cutPatch(url: string, offset: number, body: Uint8Array, sent: number) {
  const u = new URL(url);
  const head = [
    `PATCH ${u.pathname}${u.search} HTTP/1.1`,
    `Host: ${u.host}`,
    `Authorization: Bearer ${t.apiKey}`,
    "Tus-Resumable: 1.0.0",
    `Upload-Offset: ${offset}`,
    "Content-Type: application/offset+octet-stream",
    `Content-Length: ${body.byteLength}`,
    "",
    "",
  ].join("\r\n");
  const socket = await Bun.connect({ hostname: u.hostname, port: Number(u.port), socket: { data() {} } });
  socket.write(head);
  socket.write(body.subarray(0, sent));
  socket.flush();
  await Bun.sleep(300);
  socket.end();
}

async function waitStatus(id: string, statuses: string[]) {
  return waitFor(
    async () => {
      const body = await ok(t.api(`/videos/${id}/`), "getVideo");
      return statuses.includes(body.data?.video?.status) ? body.data : undefined;
    },
    { timeoutMs: 90_000, what: `video ${id} in ${statuses}` },
  );
}

describe("resumable uploads with the API key", () => {
  test("create, append, cut mid-PATCH, HEAD the offset, resume: byte-identical, registered with POST /videos/, COMPLETED", async () => {
    const created = await create(FILE.byteLength);
    expect(created.status).toBe(201);
    expect(created.headers.get("tus-resumable")).toBe("1.0.0");
    const location = created.headers.get("location")!;
    expect(location).toStartWith(`${t.base}/api/public/v1/videos/uploads/upl_`);
    const id = location.split("/").pop()!;
    const sourceUrl = created.headers.get("x-source-url")!;
    expect(sourceUrl).toBe(`${t.base}/uploads/${id}`);

    const first = 60_000;
    const p1 = await patch(location, 0, FILE.subarray(0, first));
    expect(p1.status).toBe(204);
    expect(p1.headers.get("upload-offset")).toBe(String(first));
    expect(await offsetOf(location)).toEqual({ status: 200, offset: first, length: FILE.byteLength });

    // The next PATCH loses its connection after 40 000 of its bytes.
    await cutPatch(location, first, FILE.subarray(first), 40_000);
    const afterCut = await until(
      () => offsetOf(location),
      (h) => h.status === 200 && h.offset > first,
      10_000,
    );
    expect(afterCut.offset).toBeLessThanOrEqual(first + 40_000);
    expect(afterCut.length).toBe(FILE.byteLength);
    // Not finished, so not registrable yet.
    const early = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl } });
    expect(early.status).toBe(422);

    // A PATCH from a stale offset is refused (409) in the envelope; resuming from HEAD's offset completes it.
    const stale = await patch(location, first, FILE.subarray(first));
    expect(stale.status).toBe(409);
    expect((await failed(stale)).error.code).toBe("VALIDATION_ERROR");
    const rest = await patch(location, afterCut.offset, FILE.subarray(afterCut.offset));
    expect(rest.status).toBe(204);
    expect(rest.headers.get("upload-offset")).toBe(String(FILE.byteLength));
    // A HEAD after the end still tells a resuming client it is done.
    expect(await offsetOf(location)).toEqual({ status: 200, offset: FILE.byteLength, length: FILE.byteLength });

    const stored = join(t.dataDir, "uploads", id);
    expect(Buffer.compare(readFileSync(stored), FILE)).toBe(0);
    expect(existsSync(join(t.dataDir, "uploads", "tus", id))).toBe(false);

    const reg = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl } });
    expect(reg.status).toBe(201);
    const videoId = (await ok(reg, "createVideo")).data.asset.public_id;
    const done = await waitStatus(videoId, ["COMPLETED", "ERROR"]);
    expect(done.video.status).toBe("COMPLETED");
    expect(done.video.duration_seconds).toBeGreaterThanOrEqual(1);
  }, 120_000);

  test("tus-js-client resumes from a new process: every answer carries X-Source-Url (HEAD included), and the upload URL itself registers", async () => {
    const node = async (...args: string[]) => {
      const p = Bun.spawn(["node", join(import.meta.dir, "support/tus-client.mjs"), ...args], { stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect(err).toBe("");
      expect(code).toBe(0);
      return JSON.parse(out.trim().split("\n").at(-1)!);
    };
    const file = join(FIXTURES, "av-360p-2s.mp4");
    const first = await node("start", endpoint(), t.apiKey, file);
    expect(first.url).toStartWith(`${t.base}/api/public/v1/videos/uploads/upl_`);
    const id = first.url.split("/").pop();
    expect((await offsetOf(first.url)).offset).toBe(64 * 1024);

    // A HEAD alone (what a resuming client sends first) names the source_url.
    const head = await tus(first.url, { method: "HEAD" });
    expect(head.headers.get("x-source-url")).toBe(`${t.base}/uploads/${id}`);

    const second = await node("resume", first.url, t.apiKey, file);
    expect(second.sawSourceUrl[0]).toBe("HEAD");
    expect(second.sawSourceUrl).toContain("PATCH");
    expect(second.sourceUrl).toBe(`${t.base}/uploads/${id}`);
    expect(Buffer.compare(readFileSync(join(t.dataDir, "uploads", id)), FILE)).toBe(0);

    // The README's recipe: register the source_url the resumed client got.
    const reg = await t.api("/videos/", { method: "POST", json: { source_url: second.sourceUrl, title: "Resumed" } });
    expect(reg.status).toBe(201);
    const videoId = (await ok(reg, "createVideo")).data.video.id;
    // The tus URL itself names the same upload: the same video (idempotent on the upload), with or without ?token=.
    for (const url of [second.url, `${second.url}?token=x`]) {
      const again = await t.api("/videos/", { method: "POST", json: { source_url: url } });
      expect(again.status).toBe(200);
      expect((await ok(again, "createVideo")).data.video.id).toBe(videoId);
    }
    expect((await waitStatus(videoId, ["COMPLETED", "ERROR"])).video.status).toBe("COMPLETED");
  }, 180_000);

  test("the tus upload URL registers a finished upload by itself, and never another organization's", async () => {
    const created = await create(FILE.byteLength);
    const location = created.headers.get("location")!;
    expect((await patch(location, 0, FILE)).status).toBe(204);
    const other = await t.service.orgs.createOrg("tus-url-other");
    const foreign = await t.api("/videos/", { method: "POST", key: other.apiKey, json: { source_url: location } });
    expect(foreign.status).toBe(422);
    const reg = await t.api("/videos/", { method: "POST", json: { source_url: location } });
    expect(reg.status).toBe(201);
    expect((await ok(reg, "createVideo")).data.video.source_url).toBe(created.headers.get("x-source-url"));
  }, 60_000);

  test("a wrong key is 401 in the envelope; another organization's upload id is 404", async () => {
    const bad = await create(10, "sk_live_nope_nope");
    expect(bad.status).toBe(401);
    expect((await failed(bad)).error.code).toBe("INVALID_API_KEY");

    const mine = (await create(10)).headers.get("location")!;
    const other = await t.service.orgs.createOrg("other");
    expect((await offsetOf(mine, other.apiKey)).status).toBe(404);
    const theirs = await patch(mine, 0, new Uint8Array(10), other.apiKey);
    expect(theirs.status).toBe(404);
    const body = await failed(theirs, "appendTusUpload");
    expect(body.success).toBe(false);
    expect(body.error.code).toBe("NOT_FOUND");
    expect((await tus(mine, { method: "DELETE", key: other.apiKey })).status).toBe(404);
    // Still the owner's.
    expect((await offsetOf(mine)).status).toBe(200);
    expect((await tus(mine, { method: "DELETE" })).status).toBe(204);
    expect((await offsetOf(mine)).status).toBe(404);
  });

  test("Upload-Length over UPLOAD_MAX_BYTES is 413 at creation, nothing created", async () => {
    const before = await t.service.database.db.select().from(uploads);
    const res = await create(MAX + 1);
    expect(res.status).toBe(413);
    const body = await failed(res);
    expect(body.error.code).toBe("VALIDATION_ERROR");
    expect(Object.keys(body.error.details)).toEqual(["Upload-Length"]);
    expect((await t.service.database.db.select().from(uploads)).length).toBe(before.length);
  });

  test("at most UPLOAD_CONCURRENT_PER_ORG unfinished uploads per organization: 429, freed by DELETE", async () => {
    const org = await t.service.orgs.createOrg("busy");
    const urls: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await create(100, org.apiKey);
      expect(res.status).toBe(201);
      urls.push(res.headers.get("location")!);
    }
    const refused = await create(100, org.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect((await failed(refused)).error.code).toBe("RATE_LIMITED");
    // A finished one no longer counts; neither does an abandoned one deleted by its client.
    expect((await patch(urls[0]!, 0, new Uint8Array(100), org.apiKey)).status).toBe(204);
    expect((await create(100, org.apiKey)).status).toBe(201);
    expect((await tus(urls[1]!, { method: "DELETE", key: org.apiKey })).status).toBe(204);
    expect((await create(100, org.apiKey)).status).toBe(201);
  });

  test("retention deletes an upload abandoned past its expiry (row and partial file), not a live one", async () => {
    const abandoned = (await create(1000)).headers.get("location")!;
    const live = (await create(1000)).headers.get("location")!;
    expect((await patch(abandoned, 0, new Uint8Array(10))).status).toBe(204);
    const id = abandoned.split("/").pop()!;
    const liveId = live.split("/").pop()!;
    const part = join(t.dataDir, "uploads", "tus", id);
    expect(existsSync(part)).toBe(true);
    // Idle for longer than the slot's life: its expiry passed an hour ago, its file was last written then.
    const hourAgo = Date.now() - 3600_000;
    await t.service.database.write((tx) => tx.update(uploads).set({ expiresAt: hourAgo }).where(eq(uploads.id, id)));
    utimesSync(part, hourAgo / 1000, hourAgo / 1000);
    const retention = createRetention({ database: t.service.database, config: t.service.config, logger: silentLogger });
    const report = await retention.sweep();
    expect(report.tus_files).toBe(2);
    expect(existsSync(part)).toBe(false);
    expect(existsSync(`${part}.json`)).toBe(false);
    expect(await t.service.database.db.select().from(uploads).where(eq(uploads.id, id))).toEqual([]);
    expect((await offsetOf(abandoned)).status).toBe(404);
    expect((await offsetOf(live)).status).toBe(200);
    expect(existsSync(join(t.dataDir, "uploads", "tus", liveId))).toBe(true);
  });
});

describe("resumable uploads with a presigned token (browsers, no key)", () => {
  test("tus_url from POST /videos/upload-url/ creates one upload, reaches only it, and its source_url registers", async () => {
    const up = (await ok(t.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl")).data;
    expect(up.tus_url).toStartWith(`${t.base}/api/public/v1/videos/uploads/?token=${up.upload_id}.`);

    const created = await create(FILE.byteLength, null, up.tus_url);
    expect(created.status).toBe(201);
    const location = created.headers.get("location")!;
    expect(location).toContain(`/videos/uploads/${up.upload_id}?token=`);
    expect(created.headers.get("x-source-url")).toBe(up.source_url);
    // Single use: the slot is claimed, by tus as by a PUT.
    expect((await create(FILE.byteLength, null, up.tus_url)).status).toBe(404);
    expect((await fetch(up.upload_url, { method: "PUT", body: FILE })).status).toBe(404);

    // A forged token, or this token on another upload, opens nothing.
    const forged = location.replace(/token=([^&]+)/, (_m, v: string) => `token=${v.slice(0, -1)}${v.endsWith("0") ? "1" : "0"}`);
    const f = await patch(forged, 0, FILE, null);
    expect(f.status).toBe(403);
    expect((await failed<string[]>(f)).error.details).toEqual(["upload.token"]);
    const otherId = (await create(10)).headers.get("location")!.split("/").pop()!;
    expect((await offsetOf(location.replace(up.upload_id, otherId), null)).status).toBe(404);

    expect((await patch(location, 0, FILE, null)).status).toBe(204);
    expect(Buffer.compare(readFileSync(join(t.dataDir, "uploads", up.upload_id)), FILE)).toBe(0);
    const reg = await t.api("/videos/", { method: "POST", json: { source_url: up.source_url } });
    expect(reg.status).toBe(201);
  });

  test("an expired token creates nothing (403)", async () => {
    const up = (await ok(t.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl")).data;
    const expired = tusToken(t.service.secret, up.upload_id, Math.floor(Date.now() / 1000) - 1);
    const res = await create(10, null, `${endpoint()}?token=${expired}`);
    expect(res.status).toBe(403);
    expect((await failed(res)).message).toContain("expired");
  });
});

describe("STORAGE=s3", () => {
  test("the finished upload goes to the bucket as uploads/<id>, registrable like a presigned one", async () => {
    const s3 = await startS3rver();
    const s = await startTestService({ env: { ...s3.env, MEDIA_BACKEND: "native" } });
    try {
      const created = await fetch(`${s.base}/api/public/v1/videos/uploads/`, {
        method: "POST",
        headers: { ...TUS, authorization: `Bearer ${s.apiKey}`, "Upload-Length": String(FILE.byteLength) },
      });
      expect(created.status).toBe(201);
      const location = created.headers.get("location")!;
      const id = location.split("/").pop()!;
      const res = await fetch(location, {
        method: "PATCH",
        headers: { ...TUS, authorization: `Bearer ${s.apiKey}`, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream" },
        body: FILE,
      });
      expect(res.status).toBe(204);
      const object = s.service.store.objects;
      expect(object.kind).toBe("s3");
      expect((await object.stat(`uploads/${id}`))?.size).toBe(FILE.byteLength);
      expect(existsSync(join(s.dataDir, "uploads", "tus", id))).toBe(false);
      const reg = await s.api("/videos/", { method: "POST", json: { source_url: created.headers.get("x-source-url") } });
      expect(reg.status).toBe(201);
    } finally {
      await s.stop();
      await s3.stop();
    }
  }, 60_000);
});
