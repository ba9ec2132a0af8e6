import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { importPKCS8, SignJWT } from "jose";
import { webrtcAvailability } from "../src/webrtc/availability.ts";
import { hasChromium } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";
import { ffmpegTestPublish, startWebrtcBrowser, untilPlaying, type WebrtcBrowser, whepPlay } from "./support/webrtc-pages.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 27 on a real broadcast: a signed live stream still goes LIVE (the
 * service's own check passes the gate), its live HLS plays only with a
 * token, WHEP only with a token and an allowed Referer (Chromium), and its
 * recording inherits the policy and the restriction.
 */
let t: TestService;

let b: WebrtcBrowser;
const whepReady = hasChromium && webrtcAvailability().available;
if (!whepReady) console.warn("playback-signed-live skipped: needs /usr/bin/chromium and the mediasoup worker (npm run setup:webrtc)");

beforeAll(async () => {
  if (!whepReady) return;
  [t, b] = await Promise.all([startTestService({ env: { LIVE_RECONNECT_MS: "400", WEBRTC_PORT: "0" } }), startWebrtcBrowser()]);
}, 60_000);
afterAll(async () => {
  await b?.close();
  await t?.stop();
});

test.skipIf(!whepReady)(
  "a signed, restricted stream: LIVE, live HLS and WHEP only with a token and an allowed Referer, and a recording that inherits both",
  async () => {
    const key = (await ok(t.api("/signing-keys/", { method: "POST" }), "createSigningKey")).data;
    const restriction = (
      await ok(t.api("/playback-restrictions/", { method: "POST", json: { referrer: { allowed_domains: ["example.com", "127.0.0.1"], allow_no_referrer: true } } }), "createPlaybackRestriction")
    ).data;
    // Named by a token's playback_restriction_id claim: refuses the browser page's origin (127.0.0.1).
    const elsewhere = (await ok(t.api("/playback-restrictions/", { method: "POST", json: { referrer: { allowed_domains: ["example.com"], allow_no_referrer: false } } }), "createPlaybackRestriction"))
      .data;
    const privateKey = await importPKCS8(Buffer.from(key.private_key, "base64").toString("ascii"), "RS256");
    const sign = (sub: string, claims: Record<string, unknown> = {}) =>
      new SignJWT({ sub, aud: "v", exp: Math.floor(Date.now() / 1000) + 600, ...claims }).setProtectedHeader({ alg: "RS256", kid: key.id }).sign(privateKey);

    const s = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "Signed live", playback_policy: "signed", playback_restriction_id: restriction.id } }), "createLivestream")).data
      .stream;
    expect(s.playback_policy).toBe("signed");
    expect(s.whep_url).toBeString();
    const ff = ffmpegTestPublish(s.rtmp_url, { seconds: 30, size: "320x180", fps: 15, audioKbps: 64 });
    // LIVESTREAM_STARTED needs the service's own player to play hls_url: it passes the stream's gate.
    await streamIn(t, s.id, ["LIVE"], 20_000);
    expect((await fetch(s.hls_url)).status).toBe(403);
    const token = await sign(s.id);
    const live = await fetch(`${s.hls_url}?token=${token}`);
    expect(live.status).toBe(200);
    const uris = (await live.text()).split("\n").filter((l) => l && !l.startsWith("#"));
    expect(uris.length).toBeGreaterThan(0);
    expect(uris.every((u) => u.includes(`token=${token}`))).toBe(true);
    expect((await fetch(new URL(uris[0]!, s.hls_url))).status).toBe(200);
    expect((await fetch(`${s.hls_url}?token=${token}`, { headers: { referer: "https://elsewhere.org/" } })).status).toBe(403);

    // WHEP (issue 27): the same rules as hls_url. The viewer page's origin is 127.0.0.1 (another port than the service's).
    const viewer = await b.page();
    const bare = await whepPlay(viewer, s.whep_url!);
    expect(bare.status).toBe(403);
    expect(JSON.parse(bare.body)).toMatchObject({ success: false, error: { code: "PERMISSION_DENIED", details: { token: expect.stringContaining("required") } } });
    const otherSub = await whepPlay(await b.page(), `${s.whep_url}?token=${await sign("ls_another")}`);
    expect(otherSub.status).toBe(403);
    expect(JSON.parse(otherSub.body).error.details.token).toContain("sub");
    const refusedSite = await whepPlay(await b.page(), `${s.whep_url}?token=${await sign(s.id, { playback_restriction_id: elsewhere.id })}`);
    expect(refusedSite.status).toBe(403);
    expect(JSON.parse(refusedSite.body).error.details.referrer).toContain("127.0.0.1");
    const played = await whepPlay(viewer, `${s.whep_url}?token=${token}`);
    expect(played.status).toBe(201);
    const { later } = await untilPlaying(viewer);
    expect(later.videoWidth).toBe(320);
    await fetch(played.location!, { method: "DELETE" });

    await ff.exited;
    const ended = await streamIn(t, s.id, ["ENDED"], 20_000);
    const assetId = ended.recording!.asset_id as string;
    const video = await waitFor(
      async () => {
        const b = await ok(t.api(`/videos/${assetId}/`), "getVideo");
        return ["COMPLETED", "ERROR"].includes(b.data?.video?.status) ? b.data : undefined;
      },
      { timeoutMs: 180_000, what: "recording transcode" },
    );
    expect(video.video).toMatchObject({ status: "COMPLETED", playback_policy: "signed", playback_restriction_id: restriction.id });
    expect((await fetch(video.video.url!)).status).toBe(403);
    expect((await fetch(`${video.video.url}?token=${await sign(s.id)}`)).status).toBe(403);
    expect((await fetch(`${video.video.url}?token=${await sign(assetId)}`)).status).toBe(200);
  },
  300_000,
);
