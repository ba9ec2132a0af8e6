import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importPKCS8, SignJWT } from "jose";
import { ffprobeFile } from "../media/transcoder/test-support/ffprobe-file.ts";
import { topLevelBoxes } from "../media/transcoder/test-support/mp4-boxes.ts";
import { waitFor } from "./support/events.ts";
import { parsePlaylist } from "./support/media-check.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 27 item 4, black-box against a running service (native ffmpeg): static renditions asked on
 * POST /videos/ (or by the organization's default) become an MP4 and an M4A, checked with ffprobe after
 * downloading them from their URLs; listed with their sizes; the master's audio-only variant; deleted with
 * the video; a signed video's refused without a token; a DRM video gets no clear copy.
 */

let t: TestService;
let dir: string;
let sourceUrl: string;
let server: ReturnType<typeof Bun.serve>;

// Untyped on purpose: the test walks answers of several routes by key (the typed readers are test/support/api.ts).
const json = async (r: Response) => (await r.json()) as any;

async function register(body: Record<string, unknown>) {
  const r = await t.api("/videos/", { method: "POST", json: { source_url: `${sourceUrl}?${crypto.randomUUID()}`, ...body } });
  return { status: r.status, body: await json(r) };
}

async function completed(id: string): Promise<any> {
  return waitFor(
    async () => {
      const d = (await json(await t.api(`/videos/${id}/`))).data;
      if (d.video.status === "ERROR") throw new Error(`transcode failed: ${JSON.stringify(d.error)}`);
      return d.video.status === "COMPLETED" ? d : undefined;
    },
    { timeoutMs: 110_000, intervalMs: 300, what: `video ${id} completed` },
  );
}

/** Downloads a media URL into the temp dir (ffprobe reads files). */
async function saved(url: string, name: string): Promise<{ path: string; res: Response; size: number }> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const path = join(dir, name);
  const size = await Bun.write(path, await res.arrayBuffer());
  return { path, res, size };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "static-renditions-"));
  const source = join(dir, "source.mp4");
  const lavfi = ["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=3", "-f", "lavfi", "-i", "sine=frequency=440:duration=3"];
  const ff = Bun.spawnSync(
    ["nice", "-n", "5", "ffmpeg", "-hide_banner", "-loglevel", "error", ...lavfi, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", source],
    { stderr: "pipe" },
  );
  if (ff.exitCode !== 0) throw new Error(ff.stderr.toString());
  server = Bun.serve({ port: 0, fetch: () => new Response(Bun.file(source)) });
  sourceUrl = `http://127.0.0.1:${server.port}/source.mp4`;
  t = await startTestService({ env: { MEDIA_BACKEND: "native" } });
  // Two small rungs: the encodes are not what is tested.
  const rung = (height: number) => ({ name: `${height}p`, height, videoBitrateKbps: 200, audioBitrateKbps: 64 });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, transcoding: { ladder: [rung(144), rung(180)] }, features: { ...s.features, drm: true } }));
});

afterAll(async () => {
  await t?.stop();
  server?.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

describe("static renditions of a public video", () => {
  let id: string;
  let data: any;

  beforeAll(async () => {
    const r = await register({ static_renditions: ["highest", "audio-only", "144p", "highest"] });
    expect(r.status).toBe(201);
    id = r.body.data.asset.public_id;
    // Listed at once, each name once, being made.
    expect(r.body.data.video.static_renditions).toEqual(["highest", "audio-only", "144p"].map((name) => ({ name, url: null, status: "preparing", bytes: null, error: null })));
    data = await completed(id);
  }, 120_000);

  test("each is listed ready with its URL and size; storage counts them in total_bytes", async () => {
    const list = data.video.static_renditions;
    expect(list.map((s: any) => [s.name, s.status, s.error])).toEqual([
      ["highest", "ready", null],
      ["audio-only", "ready", null],
      ["144p", "ready", null],
    ]);
    expect(list[0].url).toEndWith("/static/180p.mp4");
    expect(list[1].url).toEndWith("/static/audio.m4a");
    expect(list[2].url).toEndWith("/static/144p.mp4");
    for (const s of list) {
      const head = await fetch(s.url, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-length")).toBe(s.bytes);
    }
    const sum = list.reduce((n: number, s: any) => n + Number(s.bytes), 0);
    expect(Number(data.storage.static_rendition_bytes)).toBe(sum);
    const parts = ["hls_bytes", "download_bytes", "original_bytes", "static_rendition_bytes"].reduce((n, k) => n + Number(data.storage[k]), 0);
    expect(Number(data.storage.total_bytes)).toBe(parts);
  });

  test("the MP4s are H.264/AAC at their rung, faststart (moov before mdat), the source's length, served as video/mp4 with ranges", async () => {
    for (const [name, height] of [
      ["highest", 180],
      ["144p", 144],
    ] as const) {
      const s = data.video.static_renditions.find((x: any) => x.name === name);
      const { path, res } = await saved(s.url, `${name}.mp4`);
      expect(res.headers.get("content-type")).toBe("video/mp4");
      const probed = await ffprobeFile(path);
      expect(probed.streams.map((x) => [x.codec_type, x.codec_name, x.height ?? null])).toEqual([
        ["video", "h264", height],
        ["audio", "aac", null],
      ]);
      expect(probed.duration).toBeGreaterThan(2.8);
      expect(probed.duration).toBeLessThan(3.3);
      const boxes = topLevelBoxes(path);
      expect(boxes.indexOf("moov")).toBeGreaterThan(-1);
      expect(boxes.indexOf("moov")).toBeLessThan(boxes.indexOf("mdat"));
    }
    const range = await fetch(data.video.static_renditions[0].url, { headers: { range: "bytes=4-7" } });
    expect(range.status).toBe(206);
    expect(await range.text()).toBe("ftyp");
  });

  test("the M4A is the audio alone (AAC, M4A brand), faststart, served as audio/mp4", async () => {
    const { path, res } = await saved(data.video.static_renditions[1].url, "audio.m4a");
    expect(res.headers.get("content-type")).toBe("audio/mp4");
    const probed = await ffprobeFile(path);
    expect(probed.streams.map((x) => [x.codec_type, x.codec_name])).toEqual([["audio", "aac"]]);
    expect(probed.duration).toBeGreaterThan(2.8);
    const boxes = topLevelBoxes(path);
    expect(boxes.indexOf("moov")).toBeLessThan(boxes.indexOf("mdat"));
  });

  test("the HLS master lists an audio-only variant last, with the audio's CODECS only; its segments probe as AAC alone", async () => {
    const master = parsePlaylist(await (await fetch(data.video.url)).text());
    expect(master.streams.map((s) => s.uri)).toEqual(["144p/index.m3u8", "180p/index.m3u8", "audio-only/index.m3u8"]);
    expect(master.streams[2]!.attrs).toContain('CODECS="mp4a.40.2"');
    expect(master.streams[2]!.attrs).not.toContain("RESOLUTION");
    const variantUrl = new URL(master.streams[2]!.uri, data.video.url);
    const media = parsePlaylist(await (await fetch(variantUrl)).text());
    expect(media.ended).toBe(true);
    expect(media.durations.reduce((a, b) => a + b, 0)).toBeGreaterThan(2.8);
    const { path } = await saved(new URL(media.uris[0]!, variantUrl).href, "audio-seg.ts");
    expect((await ffprobeFile(path)).streams.map((x) => [x.codec_type, x.codec_name])).toEqual([["audio", "aac"]]);
  });

  test("deleted with the video: its files answer 404 and are gone from the store", async () => {
    const urls = data.video.static_renditions.map((s: any) => s.url);
    const mediaDir = t.service.store.mediaDir(id);
    expect(existsSync(join(mediaDir, "static", "audio.m4a"))).toBe(true);
    expect((await t.api(`/videos/${id}/`, { method: "DELETE" })).status).toBe(200);
    for (const url of urls) expect((await fetch(url)).status).toBe(404);
    expect(existsSync(mediaDir)).toBe(false);
  });
});

describe("refusals and rules", () => {
  test("422 details.static_renditions for a name outside the ladder, a bad shape, or with drm_enabled; nothing created", async () => {
    for (const [body, needle] of [
      [{ static_renditions: ["720p"] }, '"720p" is not one of highest, audio-only, 144p, 180p'],
      [{ static_renditions: "highest" }, "must be an array"],
      [{ static_renditions: ["highest"], drm_enabled: true }, "DRM"],
    ] as const) {
      const r = await register(body);
      expect(r.status).toBe(422);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      expect(r.body.error.details.static_renditions).toContain(needle);
    }
  });

  test("a signed video's static rendition is refused without a token or with another audience, served with an aud v token", async () => {
    const key = (await json(await t.api("/signing-keys/", { method: "POST" }))).data;
    const r = await register({ playback_policy: "signed", static_renditions: ["audio-only"] });
    expect(r.status).toBe(201);
    const id = r.body.data.asset.public_id;
    const d = await completed(id);
    const url = d.video.static_renditions[0].url as string;
    expect(d.video.static_renditions[0].status).toBe("ready");
    const sign = async (aud: string) =>
      new SignJWT({ sub: id, aud, exp: Math.floor(Date.now() / 1000) + 600 })
        .setProtectedHeader({ alg: "RS256", kid: key.id })
        .sign(await importPKCS8(Buffer.from(key.private_key, "base64").toString("ascii"), "RS256"));
    const bare = await fetch(url);
    expect(bare.status).toBe(403);
    expect((await json(bare)).error.details.token).toContain("required");
    expect((await fetch(`${url}?token=${await sign("t")}`)).status).toBe(403);
    const played = await fetch(`${url}?token=${await sign("v")}`);
    expect(played.status).toBe(200);
    expect(played.headers.get("content-type")).toBe("audio/mp4");
  });

  test("the organization's default applies to a video without its own; on a DRM video each is errored (no clear copy written)", async () => {
    const set = await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, staticRenditions: ["highest", "audio-only"] }));
    expect(set.settings.staticRenditions).toEqual(["highest", "audio-only"]);
    expect((await json(await t.api("/organization/"))).data.organization.static_renditions).toEqual(["highest", "audio-only"]);
    const r = await register({ drm_enabled: true });
    expect(r.status).toBe(201);
    const id = r.body.data.asset.public_id;
    const errored = ["highest", "audio-only"].map((name) => ({ name, url: null, status: "errored", bytes: null, error: { code: "DRM_PROTECTED", message: expect.stringContaining("DRM") } }));
    expect(r.body.data.video.static_renditions).toEqual(errored);
    const d = await completed(id);
    expect(d.video.static_renditions).toEqual(errored);
    expect(d.storage.static_rendition_bytes).toBeUndefined();
    expect(existsSync(join(t.service.store.mediaDir(id), "static"))).toBe(false);
    expect(existsSync(join(t.service.store.mediaDir(id), "dash", "manifest.mpd"))).toBe(true);
    await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, staticRenditions: [] }));
  });
});
