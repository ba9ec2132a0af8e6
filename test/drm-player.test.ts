import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packageDash } from "../media/drm/index.ts";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { CHROMIUM_MISSING, hasChromium, type PlayerHarness, SHAKA_CATEGORY_DRM, SHAKA_LICENSE_REQUEST_FAILED, startPlayer } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { FIXTURES, startFileServer } from "./support/file-server.ts";
import { createDrmTokens } from "../src/videos/drm-tokens.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const KID = "00112233445566778899aabbccddeeff";
const KEY = "ffeeddccbbaa99887766554433221100";

/** Raw-key CENC DASH with the common-system PSSH, packaged by media/drm straight from the fixture (not by the service): proves the harness alone. */
async function packageFixture(dir: string) {
  await packageDash({ inputs: [{ name: "720p", file: join(FIXTURES, "av-720p-3s.mp4"), video: true, audio: true }], outDir: dir, drm: { keyId: KID, key: KEY }, segmentSeconds: 1 });
}

describe.skipIf(!hasChromium)("shaka-player in Chromium", () => {
  let player: PlayerHarness;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "drm-dash-"));
    await packageFixture(dir);
    player = await startPlayer({ files: dir });
  }, 120_000);
  afterAll(async () => {
    await player?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("harness: packager-made CENC DASH plays past 2 s with the ClearKey keys given directly", async () => {
    const r = await player.playDash({ manifestUrl: player.fileUrl("manifest.mpd"), clearKeys: { [KID]: KEY } });
    expect(r.currentTime).toBeGreaterThan(2);
    expect(r.keySystem).toBe("org.w3.clearkey");
  }, 60_000);

  test("harness: with a wrong key the samples do not decode (the media is really encrypted)", async () => {
    const r = await player.tryDash({ manifestUrl: player.fileUrl("manifest.mpd"), clearKeys: { [KID]: "0".repeat(32) } });
    expect(r.ok).toBe(false);
  }, 60_000);

  test("harness: the same DASH without a key fails with a DRM error", async () => {
    const r = await player.tryDash({ manifestUrl: player.fileUrl("manifest.mpd") });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.category).toBe(SHAKA_CATEGORY_DRM);
  }, 60_000);
});

const native = await hasNativeFfmpeg();

/**
 * The service end to end: a DRM video (native backend, the organization's DRM
 * feature on) is transcoded and packaged, then shaka-player plays `video.url`
 * in Chromium with `video.drm_license_url` as its ClearKey licence server. The
 * page's origin (the page server) differs from the service's (another port):
 * the manifest, the segments and the licence POST are all cross-origin.
 */
describe.skipIf(!hasChromium || !native)("DRM video in shaka-player and dash.js through the licence service", () => {
  let player: PlayerHarness;
  let t: TestService;
  let files: ReturnType<typeof startFileServer>;
  let video: any;
  let renditions: any[];
  beforeAll(async () => {
    files = startFileServer();
    [player, t] = await Promise.all([startPlayer(), startTestService({ env: { MEDIA_BACKEND: "native" } })]);
    await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, features: { ...s.features, drm: true } }));
    const created = await ok(t.api("/videos/", { method: "POST", json: { source_url: files.url("av-720p-3s.mp4"), drm_enabled: true } }), "createVideo");
    if (!created.success) throw new Error(`POST /videos/ failed: ${JSON.stringify(created)}`);
    const data = await waitFor(
      async () => {
        const b = await ok(t.api(`/videos/${created.data.asset.public_id}/`), "getVideo");
        return ["COMPLETED", "ERROR"].includes(b.data?.video?.status) ? b.data : undefined;
      },
      { timeoutMs: 60_000, what: "DRM video COMPLETED" },
    );
    video = data.video;
    renditions = data.renditions;
  }, 180_000);
  afterAll(async () => {
    await player?.close();
    await t?.stop();
    files?.stop();
  });

  test("video.url plays past 2 s with ClearKey keys from video.drm_license_url (cross-origin)", async () => {
    expect(video).toMatchObject({ status: "COMPLETED", drm: true });
    expect(video.url).toEndWith(".mpd");
    expect(video.drm_content_id).toMatch(/^[0-9a-f]{32}$/);
    expect(new URL(video.drm_license_url).searchParams.get("token")).toBeTruthy();
    expect(new URL(video.url).origin).not.toBe(player.origin);

    const r = await player.playDash({ manifestUrl: video.url, licenseUrl: video.drm_license_url });
    expect(r.currentTime).toBeGreaterThan(2);
    expect(r.keySystem).toBe("org.w3.clearkey");
    // The keys came from the service's licence endpoint, not from anywhere else.
    expect(r.requests).toContain(`POST ${video.drm_license_url}`);
  }, 60_000);

  /**
   * Issue 23 (8): dash.js could not use `drm_license_url` as its ClearKey server (error 113, "Error
   * generating key request": it asked Chromium for a `keyids` request from the MPD's common-system PSSH).
   */
  test("dash.js plays video.url past 2 s, frames decoded, with video.drm_license_url as its ClearKey serverURL (cross-origin)", async () => {
    const r = await player.tryDashJs({ manifestUrl: video.url, licenseUrl: video.drm_license_url, timeoutMs: 60_000 });
    expect(r.ok ? r : r.error).toMatchObject({ ok: true });
    if (!r.ok) return;
    expect(r.currentTime).toBeGreaterThan(2);
    expect(r.decodedFrames).toBeGreaterThan(0);
    expect(r.requests).toContain(`POST ${video.drm_license_url}`);
    // And each rendition's own manifest.
    const low = await player.tryDashJs({ manifestUrl: renditions[0].url, licenseUrl: video.drm_license_url, untilSeconds: 1, timeoutMs: 60_000 });
    expect(low.ok ? low : low.error).toMatchObject({ ok: true });
  }, 150_000);

  test("dash.js with another video's licence token gets no key: playback fails", async () => {
    const url = new URL(video.drm_license_url);
    url.searchParams.set("token", `${Math.floor(Date.now() / 1000) + 3600}.${"0".repeat(32)}`);
    const r = await player.tryDashJs({ manifestUrl: video.url, licenseUrl: url.href, timeoutMs: 30_000 });
    expect(r.ok).toBe(false);
    expect(r.requests).toContain(`POST ${url.href}`);
  }, 60_000);

  test("a rendition's own .mpd plays too", async () => {
    const low = renditions[0];
    expect(low.url).toEndWith(".mpd");
    const r = await player.playDash({ manifestUrl: low.url, licenseUrl: video.drm_license_url });
    expect(r.currentTime).toBeGreaterThan(2);
  }, 60_000);

  /** The licence URL with another token: one whose signature is off by a digit, and a genuine one (minted with the service's secret) that expired. */
  const badTokens: Array<[string, () => string]> = [
    [
      "a tampered token",
      () => {
        const url = new URL(video.drm_license_url);
        const token = url.searchParams.get("token")!;
        url.searchParams.set("token", token.slice(0, -1) + (token.endsWith("0") ? "1" : "0"));
        return url.href;
      },
    ],
    [
      "an expired token",
      () => {
        const videoId = decodeURIComponent(new URL(video.drm_license_url).pathname.split("/").at(-2)!);
        return createDrmTokens({ secret: t.service.secret, baseUrl: () => t.base, ttlMs: 1000 }).mint(videoId, Date.now() - 60_000).url;
      },
    ],
  ];
  for (const [what, licenseUrl] of badTokens) {
    test(`${what}: the licence request is refused (403) and playback fails with a DRM licence error`, async () => {
      const url = licenseUrl();
      expect(url).not.toBe(video.drm_license_url);
      const r = await player.tryDash({ manifestUrl: video.url, licenseUrl: url });
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.error.category).toBe(SHAKA_CATEGORY_DRM);
      expect(r.error.code).toBe(SHAKA_LICENSE_REQUEST_FAILED);
      // shaka's data carries the licence server's answer: the status and the URL asked.
      expect(r.error.data).toContain("403");
      expect(r.requests).toContain(`POST ${url}`);
    }, 60_000);
  }
});
