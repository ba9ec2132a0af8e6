import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importPKCS8, SignJWT, UnsecuredJWT } from "jose";
import type { Frame } from "playwright-core";
import { hasPackager } from "../media/transcoder/index.ts";
import { CHROMIUM_MISSING, hasChromium, type PlayerHarness, startPlayer } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

/**
 * Issue 27, items 1 and 2, black-box against a running service and hls.js in
 * Chromium: a signed video plays with one token appended to its bare master
 * URL, and stops with 403 for every kind of bad token; referrer rules allow
 * and refuse the page's own origin. Tokens are signed as Mux's documentation
 * shows: jose's SignJWT with the base64-decoded PEM, RS256, `kid` header.
 */

/** The page's DOM as its callbacks read it (the tsconfig has no DOM lib). */
type PageWindow = { document: { querySelector(selector: string): { currentTime: number } | null } };

let t: TestService;
let player: PlayerHarness;
let dir: string;
let otherKey: string;

// Untyped on purpose: this helper reads every route the test calls (success or error) and the test walks the answer by key; the typed readers are test/support/api.ts.
const json = async (r: Response) => (await r.json()) as any;
const api = (path: string, init: RequestInit & { json?: unknown; key?: string | null } = {}) => t.api(path, init);

async function createKey(key?: string): Promise<{ id: string; private_key: string }> {
  const r = await api("/signing-keys/", { method: "POST", key });
  expect(r.status).toBe(201);
  return (await json(r)).data;
}

/** Exactly Mux's Node example, with jose. */
async function sign(key: { id: string; private_key: string }, claims: { sub: string; aud: string; exp?: number; [k: string]: unknown }): Promise<string> {
  const privateKey = await importPKCS8(Buffer.from(key.private_key, "base64").toString("ascii"), "RS256");
  return new SignJWT({ exp: Math.floor(Date.now() / 1000) + 3600, ...claims }).setProtectedHeader({ alg: "RS256", kid: key.id }).sign(privateKey);
}

const withToken = (url: string, token: string) => `${url}?token=${encodeURIComponent(token)}`;

async function completedVideo(body: Record<string, unknown>) {
  const r = await api("/videos/", { method: "POST", json: { source_url: player.fileUrl("source.mp4"), ...body } });
  expect(r.status).toBe(201);
  const id = (await json(r)).data.asset.public_id as string;
  return waitFor(
    async () => {
      const v = (await json(await api(`/videos/${id}/`))).data;
      if (v.video.status === "ERROR") throw new Error(`transcode failed: ${JSON.stringify(v.error)}`);
      return v.video.status === "COMPLETED" ? v : null;
    },
    { timeoutMs: 240_000, intervalMs: 500, what: `video ${id} to complete` },
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "signed-"));
  const ff = Bun.spawnSync(
    ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=5", "-f", "lavfi", "-i", "sine=frequency=440:duration=5"].concat([
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
      join(dir, "source.mp4"),
    ]),
    { stdout: "pipe", stderr: "pipe" },
  );
  if (ff.exitCode !== 0) throw new Error(ff.stderr.toString());
  [player, t] = await Promise.all([startPlayer({ files: dir }), startTestService({ env: { MEDIA_BACKEND: "native" } })]);
  // One small rung: the transcodes are not what is tested.
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, transcoding: { ladder: [{ name: "180p", height: 180, videoBitrateKbps: 300, audioBitrateKbps: 64 }] } }));
  const b = await t.service.orgs.createOrg("other");
  otherKey = b.apiKey;
}, 120_000);

afterAll(async () => {
  await player?.close();
  await t?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("signing keys", () => {
  test("created once with its private key, listed without it, at most 10, another organization's is 404", async () => {
    const key = await createKey();
    expect(key.id).toMatch(/^sk_/);
    const pem = Buffer.from(key.private_key, "base64").toString("ascii");
    expect(pem).toStartWith("-----BEGIN PRIVATE KEY-----");
    const listed = (await json(await api("/signing-keys/"))).data.items;
    expect(listed).toContainEqual({ id: key.id, created_at: expect.any(String) });
    expect(JSON.stringify(listed)).not.toContain("private");
    // The service keeps only the public half: nothing in its database holds the private key.
    const rows = await t.service.database.client.execute("SELECT public_key FROM signing_keys");
    expect(rows.rows.map((r) => String(r.public_key)).every((p) => p.startsWith("-----BEGIN PUBLIC KEY-----"))).toBe(true);

    expect((await api(`/signing-keys/${key.id}/`, { method: "DELETE", key: otherKey })).status).toBe(404);
    for (let n = listed.length; n < 10; n++) await createKey();
    const refused = await api("/signing-keys/", { method: "POST" });
    expect(refused.status).toBe(422);
    expect((await json(refused)).error.details.signing_keys).toContain("10");
    for (const k of (await json(await api("/signing-keys/"))).data.items) expect((await api(`/signing-keys/${k.id}/`, { method: "DELETE" })).status).toBe(200);
    expect((await json(await api("/signing-keys/"))).data.items).toEqual([]);
  }, 120_000);
});

describe.skipIf(!hasChromium)("a signed video in hls.js", () => {
  let video: any;
  let key: { id: string; private_key: string };
  let refusing: string;
  let allowing: string;

  beforeAll(async () => {
    key = await createKey();
    video = await completedVideo({ playback_policy: "signed" });
    allowing = (await json(await api("/playback-restrictions/", { method: "POST", json: { referrer: { allowed_domains: ["127.0.0.1"], allow_no_referrer: false } } }))).data.id;
    refusing = (await json(await api("/playback-restrictions/", { method: "POST", json: { referrer: { allowed_domains: ["example.com", "*.example.com"], allow_no_referrer: false } } }))).data.id;
  }, 300_000);

  test("the payload names the policy and its URLs are bare; without a token every media URL is 403", async () => {
    expect(video.video.playback_policy).toBe("signed");
    expect(video.video.url).not.toContain("token=");
    for (const url of [video.video.url, video.renditions[0].url, video.video.download_url, video.video.thumbnail_url].filter(Boolean)) {
      const r = await fetch(url);
      expect(r.status).toBe(403);
      const body = await json(r);
      expect(body.success).toBe(false);
      expect(body.error.code).toBe("PERMISSION_DENIED");
      expect(body.error.details.token).toContain("required");
    }
  });

  test("one token on the master plays: every child playlist and segment carries it", async () => {
    const token = await sign(key, { sub: video.video.id, aud: "v" });
    const master = await (await fetch(withToken(video.video.url, token))).text();
    const uris = master.split("\n").filter((l) => l && !l.startsWith("#"));
    expect(uris.length).toBeGreaterThan(0);
    for (const u of uris) expect(u).toContain(`token=${encodeURIComponent(token)}`);
    const played = await player.playHls({ manifestUrl: withToken(video.video.url, token), selectSubtitle: false, timeoutMs: 60_000 });
    expect(played.currentTime).toBeGreaterThan(2);
    const media = played.requests.filter((r) => r.includes("/media/"));
    expect(media.some((r) => r.includes(".ts") || r.includes(".m4s"))).toBe(true);
    expect(media.every((r) => r.includes(`token=${encodeURIComponent(token)}`))).toBe(true);
  }, 120_000);

  test("expired, other-id, wrong-aud, other-organization, alg none and HS256 tokens stop hls.js with 403, details naming the reason", async () => {
    const other = await createKey(otherKey);
    const publicPem = new TextEncoder().encode("not the key");
    const past = Math.floor(Date.now() / 1000) - 60;
    const cases: Array<[string, string, RegExp]> = [
      ["expired", await sign(key, { sub: video.video.id, aud: "v", exp: past }), /expired/],
      ["other id", await sign(key, { sub: "vid_someoneelse00000000", aud: "v" }), /sub/],
      ["wrong aud", await sign(key, { sub: video.video.id, aud: "t" }), /aud must be "v"/],
      ["other organization", await sign(other, { sub: video.video.id, aud: "v" }), /not a signing key of this video's organization/],
      ["alg none", new UnsecuredJWT({ sub: video.video.id, aud: "v", exp: Math.floor(Date.now() / 1000) + 60 }).encode(), /RS256, not none/],
      ["HS256", await new SignJWT({ sub: video.video.id, aud: "v", exp: Math.floor(Date.now() / 1000) + 60 }).setProtectedHeader({ alg: "HS256", kid: key.id }).sign(publicPem), /RS256, not HS256/],
    ];
    for (const [name, token, reason] of cases) {
      const r = await fetch(withToken(video.video.url, token));
      expect(r.status, name).toBe(403);
      expect((await json(r)).error.details.token, name).toMatch(reason);
      const played = await player.tryHls({ manifestUrl: withToken(video.video.url, token), selectSubtitle: false, timeoutMs: 30_000 });
      expect(played.ok, name).toBe(false);
      if (!played.ok) expect(played.error.status, name).toBe(403);
    }
  }, 240_000);

  test("a thumbnail needs aud t; a download needs aud v", async () => {
    expect(video.video.thumbnail_url).toBeString();
    expect(video.video.download_url).toBeString();
    {
      expect((await fetch(withToken(video.video.thumbnail_url, await sign(key, { sub: video.video.id, aud: "v" })))).status).toBe(403);
      const ok = await fetch(withToken(video.video.thumbnail_url, await sign(key, { sub: video.video.id, aud: "t" })));
      expect(ok.status).toBe(200);
      expect(ok.headers.get("content-type")).toBe("image/jpeg");
    }
    {
      const ok = await fetch(withToken(video.video.download_url, await sign(key, { sub: video.video.id, aud: "v" })));
      expect(ok.status).toBe(200);
      await ok.body?.cancel();
    }
  }, 60_000);

  test("a token's playback_restriction_id: the page's origin allowed plays, refused stops with 403", async () => {
    const allowed = await sign(key, { sub: video.video.id, aud: "v", playback_restriction_id: allowing });
    const played = await player.playHls({ manifestUrl: withToken(video.video.url, allowed), selectSubtitle: false, timeoutMs: 60_000 });
    expect(played.currentTime).toBeGreaterThan(2);

    const refused = await sign(key, { sub: video.video.id, aud: "v", playback_restriction_id: refusing });
    const stopped = await player.tryHls({ manifestUrl: withToken(video.video.url, refused), selectSubtitle: false, timeoutMs: 30_000 });
    expect(stopped.ok).toBe(false);
    if (!stopped.ok) expect(stopped.error.status).toBe(403);
    const r = await fetch(withToken(video.video.url, refused), { headers: { referer: `${player.origin}/hls-player.html` } });
    expect(r.status).toBe(403);
    expect((await json(r)).error.details.referrer).toContain("127.0.0.1");
  }, 180_000);

  test("a public video with a restriction attached at creation: the refused page origin stops hls.js with 403, an allowed Referer gets 200", async () => {
    // Another source URL: POST /videos/ is idempotent per source_url (the same one answers the signed video).
    const restricted = await completedVideo({ playback_restriction_id: refusing, source_url: player.fileUrl("source.mp4?restricted") });
    expect(restricted.video.playback_policy).toBe("public");
    expect(restricted.video.playback_restriction_id).toBe(refusing);
    const stopped = await player.tryHls({ manifestUrl: restricted.video.url, selectSubtitle: false, timeoutMs: 30_000 });
    expect(stopped.ok).toBe(false);
    if (!stopped.ok) expect(stopped.error.status).toBe(403);
    expect((await fetch(restricted.video.url)).status).toBe(403);
    expect((await fetch(restricted.video.url, { headers: { referer: "https://www.example.com/page" } })).status).toBe(200);
    expect((await fetch(restricted.video.url, { headers: { referer: "https://example.com/" } })).status).toBe(200);
    expect((await fetch(restricted.video.url, { headers: { referer: "https://notexample.com/" } })).status).toBe(403);
  }, 300_000);

  const playedPast = (frame: Frame, seconds: number) =>
    frame.waitForFunction((s) => ((globalThis as unknown as PageWindow).document.querySelector("video")?.currentTime ?? 0) > s, seconds, { timeout: 60_000 });

  test("the watch page of a signed video: 403 without a valid token (envelope, or a page naming the reason); with ?token= it plays, every media request carrying it", async () => {
    const page = video.video.watch_url as string;
    const bare = await fetch(page);
    expect(bare.status).toBe(403);
    expect((await json(bare)).error).toMatchObject({ code: "PERMISSION_DENIED", details: { token: expect.stringContaining("required") } });
    const expired = await fetch(withToken(page, await sign(key, { sub: video.video.id, aud: "v", exp: Math.floor(Date.now() / 1000) - 60 })), { headers: { accept: "text/html" } });
    expect(expired.status).toBe(403);
    expect(expired.headers.get("content-type")).toStartWith("text/html");
    expect(await expired.text()).toContain("expired");

    const token = await sign(key, { sub: video.video.id, aud: "v" });
    const tab = await player.newPage();
    const media: string[] = [];
    tab.on("request", (r) => r.url().includes("/media/") && media.push(r.url()));
    try {
      await tab.goto(`${withToken(page, token)}&autoplay=1&muted=1`);
      await playedPast(tab.mainFrame(), 1.5);
      expect(media.some((u) => /\.(ts|m4s)\?/.test(u))).toBe(true);
      expect(media.every((u) => u.includes(`token=${encodeURIComponent(token)}`))).toBe(true);
    } finally {
      await tab.close();
    }
  }, 120_000);

  test("a restriction on the watch page: embedded by an allowed site it plays (its own media requests pass), embedded elsewhere it is refused", async () => {
    // The embedder is the page server reached as `localhost`; the service is 127.0.0.1, which this restriction refuses.
    const onlyLocalhost = (await json(await api("/playback-restrictions/", { method: "POST", json: { referrer: { allowed_domains: ["localhost"], allow_no_referrer: false } } }))).data.id;
    const token = await sign(key, { sub: video.video.id, aud: "v", playback_restriction_id: onlyLocalhost });
    writeFileSync(
      join(dir, "embed.html"),
      `<!doctype html><title>embedder</title><iframe src="${withToken(video.video.watch_url, token)}&autoplay=1&muted=1" width="640" height="400" allow="autoplay"></iframe>`,
    );
    const tab = await player.newPage();
    try {
      await tab.goto(player.fileUrl("embed.html").replace("127.0.0.1", "localhost"));
      const frame = await waitFor(async () => tab.frames().find((f) => f.url().includes("/watch/")), { timeoutMs: 30_000, what: "the watch page's frame" });
      await playedPast(frame, 1.5);

      await tab.goto(player.fileUrl("embed.html"));
      const refused = await waitFor(async () => tab.frames().find((f) => f.url().includes("/watch/")), { timeoutMs: 30_000, what: "the watch page's frame" });
      await refused.waitForSelector("#reasons", { timeout: 30_000 });
      expect(await refused.innerText("#reasons")).toContain("127.0.0.1");
    } finally {
      await tab.close();
    }
  }, 120_000);
});

/**
 * Issue 27 with DRM: the DASH manifest and segments need the token as any media does, and the ClearKey licence
 * needs it too, as `&playback_token=` appended to the bare `drm_license_url` (the same rule: the customer appends
 * it). shaka-player in Chromium plays with one token and stops with an expired one; the watch page hands the
 * token on to its licence request.
 */
describe.skipIf(!hasChromium || !hasPackager())("a signed DRM video in shaka-player", () => {
  let video: any;
  let key: { id: string; private_key: string };

  beforeAll(async () => {
    key = await createKey();
    await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, features: { ...s.features, drm: true } }));
    video = await completedVideo({ playback_policy: "signed", drm_enabled: true, source_url: player.fileUrl("source.mp4?drm") });
  }, 300_000);

  test("one token plays the manifest, segments and licence; an expired one stops shaka; the licence names a bad playback_token", async () => {
    expect(video.video).toMatchObject({ drm: true, playback_policy: "signed" });
    expect(video.video.url).toEndWith(".mpd");
    expect(video.video.url).not.toContain("token=");
    const licence = video.video.drm_license_url as string;
    const token = await sign(key, { sub: video.video.id, aud: "v" });
    const licenceWith = (jwt: string) => `${licence}&playback_token=${encodeURIComponent(jwt)}`;

    const played = await player.tryDash({ manifestUrl: withToken(video.video.url, token), licenseUrl: licenceWith(token), timeoutMs: 60_000 });
    expect(played.ok ? played : played.error).toMatchObject({ ok: true });
    expect(played.requests).toContain(`POST ${licenceWith(token)}`);
    expect(played.requests.filter((r) => r.includes("/media/")).every((r) => r.includes(`token=${encodeURIComponent(token)}`))).toBe(true);

    const expired = await sign(key, { sub: video.video.id, aud: "v", exp: Math.floor(Date.now() / 1000) - 60 });
    const stopped = await player.tryDash({ manifestUrl: withToken(video.video.url, expired), licenseUrl: licenceWith(expired), timeoutMs: 30_000 });
    expect(stopped.ok).toBe(false);
    // The licence alone: the DRM token is valid, the playback token is missing or expired.
    const body = JSON.stringify({ kids: ["AAECAwQFBgcICQoLDA0ODw"], type: "temporary" });
    const missing = await fetch(licence, { method: "POST", body });
    expect(missing.status).toBe(403);
    expect((await json(missing)).error.details.playback_token).toContain("required");
    const late = await fetch(licenceWith(expired), { method: "POST", body });
    expect(late.status).toBe(403);
    expect((await json(late)).error.details.playback_token).toContain("expired");
  }, 180_000);

  test("its watch page (watch_url + &token=) plays with shaka: the page's licence request carries the playback token", async () => {
    expect(video.video.watch_url).toContain("drm_token=");
    const token = await sign(key, { sub: video.video.id, aud: "v" });
    const tab = await player.newPage();
    const licences: string[] = [];
    tab.on("request", (r) => r.url().includes("/license") && licences.push(r.url()));
    try {
      await tab.goto(`${video.video.watch_url}&token=${encodeURIComponent(token)}&autoplay=1&muted=1`);
      await tab.waitForFunction(() => ((globalThis as unknown as PageWindow).document.querySelector("video")?.currentTime ?? 0) > 1.5, undefined, { timeout: 60_000 });
      expect(licences.length).toBeGreaterThan(0);
      expect(licences.every((u) => new URL(u).searchParams.get("playback_token") === token)).toBe(true);
    } finally {
      await tab.close();
    }
  }, 120_000);
});

describe("playback rules on creation", () => {
  test("restrictions: validated, listed, another organization's is refused on creation and 404 to read", async () => {
    const bad = await api("/playback-restrictions/", { method: "POST", json: { referrer: { allowed_domains: ["exa mple.com", "ok.com"], allow_no_referrer: "yes" } } });
    expect(bad.status).toBe(422);
    const details = (await json(bad)).error.details;
    expect(Object.keys(details).sort()).toEqual(["referrer.allow_no_referrer", "referrer.allowed_domains[0]"]);
    const eleven = Array.from({ length: 11 }, (_, i) => `d${i}.com`);
    expect((await api("/playback-restrictions/", { method: "POST", json: { referrer: { allowed_domains: eleven } } })).status).toBe(422);

    const theirs = (await json(await api("/playback-restrictions/", { method: "POST", key: otherKey, json: { referrer: { allowed_domains: ["b.com"] } } }))).data;
    expect(theirs.referrer).toEqual({ allowed_domains: ["b.com"], allow_no_referrer: false });
    expect((await api(`/playback-restrictions/${theirs.id}/`)).status).toBe(404);
    expect((await api(`/playback-restrictions/${theirs.id}/`, { method: "DELETE" })).status).toBe(404);
    const refused = await api("/videos/", { method: "POST", json: { source_url: player.fileUrl("source.mp4"), playback_restriction_id: theirs.id } });
    expect(refused.status).toBe(422);
    expect((await json(refused)).error.details.playback_restriction_id).toBeString();
    const refusedStream = await api("/livestreams/", { method: "POST", json: { title: "x", playback_restriction_id: theirs.id } });
    expect(refusedStream.status).toBe(422);
    expect((await api(`/playback-restrictions/${theirs.id}/`, { key: otherKey })).status).toBe(200);
  }, 60_000);

  test("a signed live stream: policy on the payload, its bare hls_url refused without a token, let through with one", async () => {
    const key = await createKey();
    const created = await api("/livestreams/", { method: "POST", json: { title: "signed live", playback_policy: "signed" } });
    expect(created.status).toBe(201);
    const stream = (await json(created)).data.stream;
    expect(stream.playback_policy).toBe("signed");
    expect(stream.hls_url).not.toContain("token=");
    const r = await fetch(stream.hls_url);
    expect(r.status).toBe(403);
    expect((await json(r)).error.details.token).toContain("required");
    // Nothing is published yet: with a valid token the gate lets the request through to the (absent) playlist.
    expect((await fetch(withToken(stream.hls_url, await sign(key, { sub: stream.id, aud: "v" })))).status).toBe(404);
    expect((await fetch(withToken(stream.hls_url, await sign(key, { sub: "ls_another", aud: "v" })))).status).toBe(403);
    const read = (await json(await api(`/livestreams/${stream.id}/`))).data.stream;
    expect(read.playback_policy).toBe("signed");
  }, 60_000);

  test("the organization's default policy applies to a video created without one", async () => {
    await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, playback: { policy: "signed" } }));
    try {
      const org = (await json(await api("/organization/"))).data.organization;
      expect(org.playback).toEqual({ policy: "signed" });
      const r = await api("/videos/", { method: "POST", json: { source_url: player.fileUrl("missing-default.mp4") } });
      expect(r.status).toBe(201);
      expect((await json(r)).data.video.playback_policy).toBe("signed");
      const stream = (await json(await api("/livestreams/", { method: "POST", json: { title: "default" } }))).data.stream;
      expect(stream.playback_policy).toBe("signed");
      expect((await fetch(stream.hls_url)).status).toBe(403);
    } finally {
      await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, playback: { policy: "public" } }));
    }
  }, 60_000);
});
