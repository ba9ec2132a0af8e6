import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { keyIdAsUuid } from "../media/drm/drm-key.ts";
import { type MpdRepresentation, mpdProtection, mpdRepresentations } from "../media/drm/mpd.ts";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { countVideoFrames, decodeSegments, expectLocked, segmentFiles } from "../media/drm/test-support/dash-checks.ts";
import { closeMediaTools } from "../media/test-support/media-tools.ts";
import { decodeVideoFrames } from "../media/transcoder/test-support/ffprobe-file.ts";
import { createLogger } from "../src/log.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { FIXTURES, startFileServer } from "./support/file-server.ts";
import { startS3rver } from "./support/s3rver.ts";
import { startSqld } from "./support/sqld.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * A DRM video end to end on the native backend: POST /videos/ with
 * drm_enabled → COMPLETED with the DRM payload fields → the manifest and
 * its segments served → the licence answers the key → each segment decrypts
 * with it (and decodes to the source's frame count), none without it.
 */
const files = startFileServer();
/** Every log line of the first service, at debug (the transcoder's own lines included). */
const lines: string[] = [];
let t: TestService;

beforeAll(async () => {
  t = await startTestService({ env: { MEDIA_BACKEND: "native", LOG_LEVEL: "debug" }, logger: createLogger({ level: "debug", write: (l) => lines.push(l) }) });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, features: { ...s.features, drm: true } }));
});
afterAll(async () => {
  await t.stop();
  files.stop();
  closeMediaTools();
});

/** The video's GET data once it is COMPLETED or ERROR. */
async function settled(svc: TestService, id: string, what: string): Promise<any> {
  return waitFor(
    async () => {
      const body = await ok(svc.api(`/videos/${id}/`), "getVideo");
      return ["COMPLETED", "ERROR"].includes(body.data.video.status) ? body.data : undefined;
    },
    { timeoutMs: 240_000, what },
  );
}

const b64url = (hex: string) => Buffer.from(hex, "hex").toString("base64url");

test("POST /videos/ with drm_enabled → encrypted DASH, the licence's key decrypts every segment", async () => {
  const source = join(FIXTURES, "av-360p-2s.mp4");
  const created = await ok(t.api("/videos/", { method: "POST", json: { source_url: files.url("av-360p-2s.mp4"), drm_enabled: true } }), "createVideo");
  const id: string = created.data.asset.public_id;
  expect(created.data.video.drm).toBe(true);
  const got = await settled(t, id, "DRM video done");
  expect(got.error).toBeNull();

  const completed = (await outboxEvents(t.service, id)).find((e) => e.event === "VIDEO_TRANSCODING_COMPLETED")!.data;
  const { video } = completed;
  const keyRow = (await t.service.database.client.execute({ sql: "SELECT key_id FROM drm_keys WHERE video_id = ?", args: [id] })).rows[0]!;
  expect(video).toMatchObject({ status: "COMPLETED", drm: true, drm_content_id: keyRow.key_id });
  expect(video.drm_content_id).toMatch(/^[0-9a-f]{32}$/);
  expect(video.url).toEndWith("/dash/manifest.mpd");
  expect(video.drm_license_url).toStartWith(`${t.base}/drm/clearkey/${id}/license?token=`);
  expect(completed.renditions.map((r: any) => [r.quality, new URL(r.url).pathname.split("/").slice(-2).join("/")])).toEqual([["360p", "dash/360p.mpd"]]);
  expect(Object.keys(completed.storage).sort()).toEqual(["download_bytes", "drm_bytes", "original_bytes", "total_bytes"]);
  const { total_bytes, drm_bytes, download_bytes, original_bytes } = completed.storage;
  expect(Number(drm_bytes)).toBeGreaterThan(0);
  expect(Number(total_bytes)).toBe(Number(drm_bytes) + Number(download_bytes) + Number(original_bytes));
  // GET answers the same video with a licence URL of its own (a fresh token).
  expect(got.video).toMatchObject({ drm: true, drm_content_id: video.drm_content_id, url: video.url });
  expect(got.video.drm_license_url).toStartWith(`${t.base}/drm/clearkey/${id}/license?token=`);

  // The manifest is served, protected with this key id.
  const res = await fetch(video.url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("dash+xml");
  const mpd = await res.text();
  expect(mpdProtection(mpd).defaultKids).toContain(keyIdAsUuid(video.drm_content_id));
  expect(mpd).toContain('value="cenc"');

  // The licence, called as a player does, from the payload's URL and from GET's.
  const kid = b64url(video.drm_content_id);
  for (const url of [video.drm_license_url, got.video.drm_license_url]) {
    const lic = await fetch(url, { method: "POST", headers: { "content-type": "application/json", origin: "https://player.example" }, body: JSON.stringify({ kids: [kid], type: "temporary" }) });
    expect(lic.status).toBe(200);
    expect(lic.headers.get("access-control-allow-origin")).toBe("*");
    const body = await ok(lic, "requestDrmLicense");
    expect(body.keys.map((k: any) => [k.kty, k.kid])).toEqual([["oct", kid]]);
  }
  const licence = await ok(fetch(video.drm_license_url, { method: "POST", body: JSON.stringify({ kids: [kid] }) }), "requestDrmLicense");
  const key = Buffer.from(licence.keys[0]!.k, "base64url").toString("hex");
  expect(key).not.toContain(video.drm_content_id);
  expect(JSON.stringify(await outboxEvents(t.service, id))).not.toContain(key);
  // Nor in any log line of the run (transcoder and packager included, at debug), in any form.
  expect(lines.join("\n")).toContain(video.drm_content_id);
  for (const form of [key, key.toUpperCase(), b64url(key), Buffer.from(key, "hex").toString("base64")]) expect(lines.join("\n")).not.toContain(form);

  // Every media segment, as served: init + segment decrypt with the licence's key, and not without it.
  const dashDir = join(t.service.objects.localPath(t.service.store.mediaKey(id))!, "dash");
  const reps = mpdRepresentations(mpd);
  expect(reps.map((r) => r.contentType).sort()).toEqual(["audio", "video"]);
  for (const rep of reps) {
    const first = relative(dashDir, segmentFiles(dashDir, rep)[0]!);
    for (const file of [rep.initialization, first]) {
      const served = await fetch(new URL(file, video.url));
      expect([file, served.status]).toEqual([file, 200]);
      expect(Buffer.from(await served.arrayBuffer()).equals(readFileSync(join(dashDir, file)))).toBe(true);
    }
    const clear = await decodeSegments(dashDir, rep, key);
    expect(clear.length).toBeGreaterThan(0);
    for (const s of clear) expect({ segment: s.segment, exitCode: s.exitCode, stderr: s.stderr }).toEqual({ segment: s.segment, exitCode: 0, stderr: "" });
    if (rep.contentType === "video") expect(clear.reduce((n, s) => n + s.hashes.length, 0)).toBe(await countVideoFrames(source));
    expectLocked(await decodeSegments(dashDir, rep, undefined), clear, rep.contentType);
  }
}, 300_000);

/**
 * Issue 23 (2): a DRM video in an organization whose downloads are Matroska got `downloads/360p.mkv`
 * under the same media token as its DASH, which played with no licence. Its download is an encrypted
 * MP4 now (its own password), and nothing under its media URL is clear media.
 */
test("a DRM video where downloads are mkv: the download is an encrypted MP4 and nothing clear is served under its media URL", async () => {
  const before = (await t.service.orgs.getOrg(t.orgId))!.settings.downloads;
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, downloads: { rungs: ["360p"], format: "mkv" } }));
  try {
    const created = await ok(t.api("/videos/", { method: "POST", json: { source_url: files.url("av-360p-2s.mp4?dl=mkv"), drm_enabled: true } }), "createVideo");
    const id: string = created.data.asset.public_id;
    const done = await settled(t, id, "DRM video with a download");
    expect(done.error).toBeNull();
    const { video } = done;
    expect(video.download_url).toEndWith("/downloads/360p.mp4");
    expect(video.download_password).toMatch(/^[0-9a-f]{32}$/);
    expect(done.renditions[0]).toMatchObject({ download_url: video.download_url, download_password: video.download_password });
    // The Matroska a clear job would have written is not there.
    expect((await fetch(video.download_url.replace(/\.mp4$/, ".mkv"))).status).toBe(404);

    // Every file under the video's media folder, as served: only protected DASH, the encrypted download, images and cues.
    const mediaDir = t.service.objects.localPath(t.service.store.mediaKey(id))!;
    const stored = (readdirSync(mediaDir, { recursive: true }) as string[]).filter((f) => statSync(join(mediaDir, f)).isFile()).sort();
    const served = stored.filter((f) => !f.split("/").some((part) => part.startsWith(".")));
    for (const f of served) expect([f, /^(dash\/.+\.(mpd|mp4|m4s)|downloads\/[\w-]+\.mp4|thumbnail\.jpg|sprite\.jpg|storyboard\.vtt)$/.test(f)]).toEqual([f, true]);
    for (const f of stored.filter((x) => !served.includes(x))) expect([f, (await fetch(t.service.store.url(id, f))).status]).toEqual([f, 404]);
    // A clear Matroska left by a DRM video transcoded before this rule (its file still stored) is not served either.
    writeFileSync(join(mediaDir, "downloads", "360p.mkv"), readFileSync(join(FIXTURES, "av-360p-2s.mp4")));
    expect((await fetch(video.download_url.replace(/\.mp4$/, ".mkv"))).status).toBe(404);
    const download = Buffer.from(await (await fetch(video.download_url)).arrayBuffer());
    const local = join(mkdtempSync(join(tmpdir(), "drm-dl-")), "360p.mp4");
    writeFileSync(local, download);
    try {
      const withKey = await decodeVideoFrames(local, video.download_password);
      expect(withKey.exitCode).toBe(0);
      expect(withKey.frameHashes.length).toBe(await countVideoFrames(join(FIXTURES, "av-360p-2s.mp4")));
      const real = new Set(withKey.frameHashes);
      const without = await decodeVideoFrames(local);
      expect(without.frameHashes.filter((h) => real.has(h))).toEqual([]);
    } finally {
      rmSync(dirname(local), { recursive: true, force: true });
    }
  } finally {
    await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, downloads: before }));
  }
}, 300_000);

test("a live stream created with drm_enabled: its live HLS is clear, its recording is packaged with DRM and licensed", async () => {
  const s = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "Protected live", drm_enabled: true } }), "createLivestream")).data.stream;
  expect(s.drm).toBe(true);
  const pub = publish({ url: s.rtmp_url, tags: await fixtureTags(), pace: "fast", unpublishAtEnd: false });
  await pub.started;
  const playlist = await waitFor(
    async () => {
      const r = await fetch(s.hls_url);
      return r.ok ? r.text() : undefined;
    },
    { timeoutMs: 40_000, what: "live playlist" },
  );
  // The live HLS stays clear (decisions: only the recording is protected): no key tag in its playlist.
  expect(playlist).not.toContain("#EXT-X-KEY");
  await waitFor(async () => (await ok(t.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream.status === "LIVE", { timeoutMs: 40_000, what: "LIVE" });
  expect((await t.api(`/livestreams/${s.id}/end/`, { method: "POST" })).status).toBe(200);
  await pub.finished.catch(() => undefined);
  const assetId = await waitFor(async () => (await ok(t.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream.recording?.asset_id, { timeoutMs: 60_000, what: "recording" });
  const rec = await settled(t, assetId, "recording transcoded");
  expect(rec.error).toBeNull();
  expect(rec.video).toMatchObject({ kind: "LIVESTREAM_RECORDING", drm: true });
  expect(rec.video.url).toEndWith("/dash/manifest.mpd");
  expect(rec.video.drm_content_id).toMatch(/^[0-9a-f]{32}$/);
  const kid = b64url(rec.video.drm_content_id);
  const lic = await ok(fetch(rec.video.drm_license_url, { method: "POST", body: JSON.stringify({ kids: [kid], type: "temporary" }) }), "requestDrmLicense");
  expect(lic.keys.map((k: any) => k.kid)).toEqual([kid]);
  const mpd = await (await fetch(rec.video.url)).text();
  expect(mpdProtection(mpd).defaultKids).toContain(keyIdAsUuid(rec.video.drm_content_id));
  // Issue 23: the clear live HLS does not outlive the broadcast (a stream without DRM keeps it LIVE_FILES_RETENTION_MS).
  await waitFor(async () => (await fetch(s.hls_url)).status === 404 || undefined, { timeoutMs: 60_000, what: "live HLS removed" });
  // A whole segment, or (an LL-HLS playlist read before its first segment closed) the init segment or a part.
  const media =
    playlist
      .split("\n")
      .find((l) => l.trim() !== "" && !l.startsWith("#"))
      ?.trim() ?? /URI="([^"]+)"/.exec(playlist)?.[1];
  expect(media).toBeString();
  expect((await fetch(new URL(media!, s.hls_url))).status).toBe(404);
}, 300_000);

/** Init + the first media segment of a representation, fetched over HTTP into `dir` (the layout the MPD names). */
async function fetchFirstSegment(mpdUrl: string, mpd: string, rep: MpdRepresentation, dir: string): Promise<void> {
  const start = /startNumber="(\d+)"/.exec(mpd)?.[1] ?? "1";
  const media = rep.media.replace("$Number%05d$", start.padStart(5, "0"));
  for (const file of [rep.initialization, media]) {
    const res = await fetch(new URL(file, mpdUrl));
    expect([file, res.status]).toEqual([file, 200]);
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), Buffer.from(await res.arrayBuffer()));
  }
}

test("STORAGE=s3, two processes on one database and bucket: packaged into the bucket, served and licensed by the other process", async () => {
  if (!(await hasNativeFfmpeg())) return;
  const [s3, sqld] = await Promise.all([startS3rver(), startSqld()]);
  const env = { ...s3.env, DATABASE_URL: sqld.url, SECRET_KEY: "drm-e2e-test-secret-key-0123456789abcdef0123", MEDIA_BACKEND: "native" };
  const a = await startTestService({ env });
  const b = await startTestService({ env, org: { orgId: a.orgId, apiKey: a.apiKey }, listen: true });
  const scratch = mkdtempSync(join(tmpdir(), "drm-e2e-"));
  try {
    await a.service.orgs.updateSettings(a.orgId, (s) => ({ ...s, features: { ...s.features, drm: true } }));
    const created = await ok(a.api("/videos/", { method: "POST", json: { source_url: files.url("av-360p-2s.mp4"), drm_enabled: true } }), "createVideo");
    const id: string = created.data.asset.public_id;
    const done = await settled(b, id, "DRM video done (s3)");
    expect(done.error).toBeNull();
    const mediaKey = a.service.store.mediaKey(id);
    const stored: string[] = [];
    for await (const o of a.service.objects.list(mediaKey)) stored.push(o.key.slice(mediaKey.length + 1));
    expect(stored).toContain("dash/manifest.mpd");
    expect(stored).toContain("dash/360p.mpd");
    expect(stored.some((k) => k.startsWith("hls/"))).toBe(false);

    // Everything through process b: the manifest (from the bucket), a token it mints, the key it opens.
    const mpdUrl = done.video.url.replace(a.base, b.base);
    const mpd = await (await fetch(mpdUrl)).text();
    const minted = await ok(b.api(`/videos/${id}/drm-token/`, { method: "POST" }), "createDrmToken");
    expect(minted.data.drm_license_url).toStartWith(`${b.base}/drm/clearkey/${id}/license?token=`);
    const kid = b64url(done.video.drm_content_id);
    const lic = await ok(fetch(minted.data.drm_license_url, { method: "POST", body: JSON.stringify({ kids: [kid], type: "temporary" }) }), "requestDrmLicense");
    const key = Buffer.from(lic.keys[0]!.k, "base64url").toString("hex");
    // The token a minted is valid on b too (one SECRET_KEY).
    expect((await fetch(done.video.drm_license_url.replace(a.base, b.base), { method: "POST", body: JSON.stringify({ kids: [kid] }) })).status).toBe(200);

    for (const rep of mpdRepresentations(mpd)) {
      const dir = join(scratch, rep.contentType);
      await fetchFirstSegment(mpdUrl, mpd, rep, dir);
      const clear = await decodeSegments(dir, rep, key);
      expect(clear.map((s) => [s.exitCode, s.stderr])).toEqual([[0, ""]]);
      expect(clear[0]!.hashes.length).toBeGreaterThan(0);
      expectLocked(await decodeSegments(dir, rep, undefined), clear, rep.contentType);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await a.stop();
    await b.stop();
    await sqld.stop();
    await s3.stop();
  }
}, 300_000);
