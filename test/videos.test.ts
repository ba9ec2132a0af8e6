import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { existsSync } from "node:fs";
import { work } from "../src/db/schema/index.ts";
import { STANDARD_RUNGS } from "../src/orgs/org-settings.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { FIXTURES, startFileServer } from "./support/file-server.ts";
import { inspectMedia, parsePlaylist } from "./support/media-check.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { answer, failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

const files = startFileServer({ stallPaths: ["/stall.mp4"] });
let t: TestService;

beforeAll(async () => {
  t = await startTestService({ env: { MEDIA_BACKEND: "wasm", SOURCE_TIMEOUT_MS: "1500" } });
});
afterAll(async () => {
  await t.stop();
  files.stop();
});

async function register(body: unknown, key?: string) {
  const res = await t.api("/videos/", { method: "POST", json: body, key });
  return { status: res.status, body: await answer(res, "createVideo") };
}

async function waitStatus(id: string, statuses: string[], timeoutMs = 90_000) {
  return waitFor(
    async () => {
      const res = await t.api(`/videos/${id}/`);
      const body = await ok(res, "getVideo");
      return statuses.includes(body.data?.video?.status) ? body.data : undefined;
    },
    { timeoutMs, what: `video ${id} in ${statuses}` },
  );
}

describe("registering and transcoding on the embedded wasm backend", () => {
  test("a registered URL becomes playable HLS with its events, renditions, storage and a download", async () => {
    const url = files.url("av-720p-3s.mp4");
    const created = await register({ source_url: url, title: "Seven twenty" });
    expect(created.status).toBe(201);
    const id = created.body.data.asset.public_id;
    expect(id).toMatch(/^vid_/);
    expect(created.body.data.video.status).toBe("TRANSCODING");

    // Progress is visible while transcoding, and only goes up.
    const seen: number[] = [];
    const data = await waitFor(
      async () => {
        const body = await ok(t.api(`/videos/${id}/`), "getVideo");
        seen.push(body.data.video.progress);
        return ["COMPLETED", "ERROR"].includes(body.data.video.status) ? body.data : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 50 },
    );
    expect(seen.some((p) => p > 0 && p < 100)).toBe(true);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(data.error).toBeNull();
    expect(data.video).toMatchObject({ id, title: "Seven twenty", status: "COMPLETED", kind: "UPLOAD", duration_seconds: 3, drm: false, progress: 100 });
    expect(data.video.size_bytes).toBe(String(Bun.file(`${FIXTURES}/av-720p-3s.mp4`).size));
    // The default ladder is 360p/720p/1080p; a 720p source is never upscaled.
    expect(data.renditions.map((r: any) => r.quality)).toEqual(["360p", "720p"]);
    // Default downloads: an mkv of the top rung, no password.
    expect(data.video.download_quality).toBe("720p");
    expect(data.video.download_url).toEndWith(".mkv");
    expect(data.video.download_password).toBeNull();
    expect(Number(data.storage!.total_bytes)).toBe(Number(data.storage!.hls_bytes) + Number(data.storage!.download_bytes) + Number(data.storage!.original_bytes));
    expect(data.stream).toBeNull();

    const master = await fetch(data.video.url!);
    expect(master.headers.get("content-type")).toContain("mpegurl");
    const mp = parsePlaylist(await master.text());
    // Two rungs, then the audio-only variant (issue 27 item 4: a player on a weak link falls back to audio).
    expect(mp.streams).toHaveLength(3);
    expect(mp.streams[2]!.attrs).toContain(`CODECS="mp4a.40.2"`);
    for (const [i, height] of [360, 720].entries()) {
      const media = parsePlaylist(await (await fetch(new URL(mp.streams[i]!.uri, data.video.url!))).text());
      expect(media.ended).toBe(true);
      const total = media.durations.reduce((a, b) => a + b, 0);
      expect(total).toBeGreaterThan(2.5);
      expect(total).toBeLessThan(3.5);
      const segUrl = new URL(media.uris[0]!, new URL(mp.streams[i]!.uri, data.video.url!));
      const seg = await (await fetch(segUrl)).arrayBuffer();
      const info = await inspectMedia(seg);
      expect(info.videoCodec).toBe("avc");
      expect(info.audioCodec).toBe("aac");
      expect(info.height).toBe(height);
    }

    const dl = await fetch(data.video.download_url!);
    expect(dl.headers.get("content-disposition")).toStartWith("attachment");
    const range = await fetch(data.video.download_url!, { headers: { range: "bytes=0-3" } });
    expect(range.status).toBe(206);
    expect(new Uint8Array(await range.arrayBuffer())).toEqual(new Uint8Array([0x1a, 0x45, 0xdf, 0xa3])); // EBML magic: Matroska

    const events = await outboxEvents(t.service, id);
    expect(events.map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
    expect(events[0]!.data.video.status).toBe("TRANSCODING");
    expect(events[1]!.data.video.transcoder_id).toStartWith("wasm");
    expect(events[3]!.data.renditions).toHaveLength(2);

    // Idempotent on source_url: the same asset, 200, nothing queued again (the video's fetch and transcode rows, and no more).
    const jobRows = async () => (await t.service.database.db.select().from(work).where(eq(work.entityId, id))).map((r) => r.type).sort();
    const queued = await jobRows();
    expect(queued).toEqual(["fetch-source", "transcode"]);
    const again = await register({ source_url: url, title: "other" });
    expect(again.status).toBe(200);
    expect(again.body.data.asset.public_id).toBe(id);
    expect(await jobRows()).toEqual(queued);
    expect((await outboxEvents(t.service, id)).length).toBe(4);
  }, 120_000);

  test("an audio-only and an odd-sized source both complete", async () => {
    const a = await register({ source_url: files.url("audio-only-2s.m4a") });
    const b = await register({ source_url: files.url("av-odd-322x242-2s.mp4") });
    const [da, db] = await Promise.all([waitStatus(a.body.data.asset.public_id, ["COMPLETED", "ERROR"]), waitStatus(b.body.data.asset.public_id, ["COMPLETED", "ERROR"])]);
    expect(da.video.status).toBe("COMPLETED");
    expect(da.video.url).toBeString();
    expect(db.video.status).toBe("COMPLETED");
    expect(db.renditions.length).toBeGreaterThanOrEqual(1);
  }, 120_000);
});

describe("failures", () => {
  test("a 404 source, a corrupt file and a stalled source each end in ERROR with a code", async () => {
    const cases = [
      ["missing.mp4", "SOURCE_NOT_FOUND"],
      ["corrupt.mp4", "INPUT_UNSUPPORTED"],
      ["stall.mp4", "SOURCE_FETCH_TIMEOUT"],
    ] as const;
    for (const [path, code] of cases) {
      const r = await register({ source_url: files.url(path) });
      expect(r.status).toBe(201);
      const data = await waitStatus(r.body.data.asset.public_id, ["ERROR", "COMPLETED"]);
      expect(data.video.status).toBe("ERROR");
      expect(data.error!.code).toBe(code);
      expect(data.error!.message).toBeString();
      const events = await outboxEvents(t.service, r.body.data.asset.public_id);
      expect(events.at(-1)!.event).toBe("VIDEO_TRANSCODING_FAILED");
      expect(events.at(-1)!.data.video.status).toBe("ERROR");
    }
  }, 60_000);

  test("an organization without transcoding gets 409 and nothing is created", async () => {
    const { org, apiKey } = await t.service.orgs.createOrg("no-transcode");
    await t.service.orgs.updateSettings(org.id, (s) => ({ ...s, transcoding: null }));
    const r = await register({ source_url: files.url("av-360p-2s.mp4") }, apiKey);
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("TRANSCODE_NOT_CONFIGURED");
    const list = await ok(t.api("/videos/", { key: apiKey }), "listVideos");
    expect(list.data.items).toEqual([]);
  });

  /** Issue 23 (16): refused on POST /videos/ but still given upload URLs; every path that would lead to a transcode is 409 now. */
  test("an organization without transcoding gets no upload either: upload-url and tus creation (key or token) are 409, nothing created", async () => {
    const { org, apiKey } = await t.service.orgs.createOrg("no-transcode-uploads");
    // A token handed out while transcoding was on, used after the operator turned it off.
    const before = (await ok(t.api("/videos/upload-url/", { method: "POST", json: {}, key: apiKey }), "createUploadUrl")).data;
    await t.service.orgs.updateSettings(org.id, (s) => ({ ...s, transcoding: null }));

    const slot = await t.api("/videos/upload-url/", { method: "POST", json: {}, key: apiKey });
    expect(slot.status).toBe(409);
    expect((await failed(slot)).error.code).toBe("TRANSCODE_NOT_CONFIGURED");
    const tus = (url: string, key?: string) => fetch(url, { method: "POST", headers: { "tus-resumable": "1.0.0", "upload-length": "1000", ...(key ? { authorization: `Bearer ${key}` } : {}) } });
    for (const res of [await tus(`${t.base}/api/public/v1/videos/uploads/`, apiKey), await tus(before.tus_url)]) {
      expect(res.status).toBe(409);
      expect(res.headers.get("location")).toBeNull();
      expect((await failed(res)).error.code).toBe("TRANSCODE_NOT_CONFIGURED");
    }
    // Nothing but the slot made before: no upload receiving bytes, the old slot still unclaimed.
    const rows = await t.service.database.client.execute({ sql: "SELECT id, status FROM uploads WHERE org_id = ?", args: [org.id] });
    expect(rows.rows.map((r: any) => [r.id, r.status])).toEqual([[before.source_url.split("/").pop(), "pending"]]);
  });

  test("drm_enabled without the DRM feature gets 409 DRM_NOT_AVAILABLE", async () => {
    const r = await register({ source_url: files.url("av-360p-2s.mp4") + "?drm", drm_enabled: true });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("DRM_NOT_AVAILABLE");
  });

  test("validation: details name the field; bad JSON and a wrong Content-Type are 422 too", async () => {
    const bad = await register({ source_url: "ftp://example.com/a.mp4" });
    expect(bad.status).toBe(422);
    expect(bad.body.error).toEqual({ code: "VALIDATION_ERROR", details: { source_url: expect.any(String) } });
    const wrongType = await register({ title: 5 });
    expect(wrongType.status).toBe(422);
    expect(Object.keys(wrongType.body.error.details).sort()).toContain("title");
    const badJson = await t.api("/videos/", { method: "POST", body: "{nope", headers: { "content-type": "application/json" } });
    expect(badJson.status).toBe(422);
    expect((await failed(badJson)).error.details).toEqual({ body: expect.any(String) });
    const text = await t.api("/videos/", { method: "POST", body: "source_url=x", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(422);
    expect((await failed(text)).error.details).toEqual({ "Content-Type": expect.any(String) });
    const noKey = await t.api("/videos/", { method: "POST", body: "{nope", headers: { "content-type": "application/json" }, key: null });
    expect(noKey.status).toBe(401);
    const limit = await t.api("/videos/?limit=500");
    expect(limit.status).toBe(422);
    expect((await failed(limit)).error.details.limit).toBeString();
  });

  test("another organization's id answers exactly like a missing id", async () => {
    const r = await register({ source_url: files.url("av-360p-2s.mp4") + "?cross" });
    const id = r.body.data.asset.public_id;
    const other = await t.service.orgs.createOrg("other");
    const strip = async (res: Response) => {
      const b = await answer(res, "getVideo");
      delete b.meta;
      return { status: res.status, b };
    };
    const foreign = await strip(await t.api(`/videos/${id}/`, { key: other.apiKey }));
    const missing = await strip(await t.api(`/videos/vid_doesnotexist0000000/`, { key: other.apiKey }));
    expect(foreign.status).toBe(404);
    expect(foreign).toEqual(missing);
    const del = await strip(await t.api(`/videos/${id}/`, { method: "DELETE", key: other.apiKey }));
    expect(del).toEqual(missing);
    expect((await t.api(`/videos/${id}/`)).status).toBe(200);
  });
});

describe("uploads", () => {
  test("presign, PUT the file, register the source_url, transcode; the URL is single-use and signed", async () => {
    const res = await t.api("/videos/upload-url/", { method: "POST", json: { filename: "clip.mp4" } });
    expect(res.status).toBe(201);
    const up = (await ok(res, "createUploadUrl")).data;
    expect(up.upload_url).toContain("sig=");
    const tampered = up.upload_url.replace(/sig=./, (m: string) => (m.endsWith("0") ? "sig=1" : "sig=0"));
    const forged = await fetch(tampered, { method: "PUT", body: Bun.file(`${FIXTURES}/av-360p-2s.mp4`) });
    expect(forged.status).toBe(403);
    expect((await failed(forged, "uploadFile")).success).toBe(false);

    const notYet = await register({ source_url: up.source_url });
    expect(notYet.status).toBe(422);

    const put = await fetch(up.upload_url, { method: "PUT", body: Bun.file(`${FIXTURES}/av-360p-2s.mp4`) });
    expect(put.status).toBe(200);
    const reused = await fetch(up.upload_url, { method: "PUT", body: "x" });
    expect(reused.status).toBe(404);

    const r = await register({ source_url: up.source_url });
    expect(r.status).toBe(201);
    const data = await waitStatus(r.body.data.asset.public_id, ["COMPLETED", "ERROR"]);
    expect(data.video.status).toBe("COMPLETED");
    expect(data.renditions.map((x: any) => x.quality)).toEqual(["360p"]);
  }, 90_000);
});

describe("delete", () => {
  test("DELETE removes the video and its files; later reads are 404", async () => {
    const r = await register({ source_url: files.url("av-360p-2s.mp4") + "?del" });
    const id = r.body.data.asset.public_id;
    const data = await waitStatus(id, ["COMPLETED", "ERROR"]);
    const dir = t.service.store.mediaDir(id);
    expect(existsSync(dir)).toBe(true);
    const del = await t.api(`/videos/${id}/`, { method: "DELETE" });
    expect(del.status).toBe(200);
    expect((await t.api(`/videos/${id}/`)).status).toBe(404);
    expect(existsSync(dir)).toBe(false);
    expect((await fetch(data.video.url!)).status).toBe(404);
  }, 90_000);
});

test("the ladder comes from the organization's settings", async () => {
  const { org, apiKey } = await t.service.orgs.createOrg("small-ladder");
  await t.service.orgs.updateSettings(org.id, (s) => ({ ...s, transcoding: { ladder: [STANDARD_RUNGS["144p"]!, STANDARD_RUNGS["240p"]!] }, downloads: { rungs: ["144p", "240p"], format: "mkv" } }));
  const r = await register({ source_url: files.url("av-360p-2s.mp4") + "?ladder" }, apiKey);
  const data = await waitFor(
    async () => {
      const b = await ok(t.api(`/videos/${r.body.data.asset.public_id}/`, { key: apiKey }), "getVideo");
      return b.data.video.status !== "TRANSCODING" ? b.data : undefined;
    },
    { timeoutMs: 90_000 },
  );
  expect(data.renditions.map((x: any) => x.quality)).toEqual(["144p", "240p"]);
  expect(data.renditions.every((x: any) => x.download_url)).toBe(true);
  expect(data.video.download_quality).toBe("144p");
}, 120_000);
