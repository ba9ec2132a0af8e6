import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { importPKCS8, SignJWT } from "jose";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { waitFor } from "./support/events.ts";
import { streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 27 on a real broadcast: a signed live stream still goes LIVE (the
 * service's own check passes the gate), its live HLS plays only with a
 * token, and its recording inherits the policy and the restriction.
 */
let t: TestService;

beforeAll(async () => {
  t = await startTestService({ env: { LIVE_RECONNECT_MS: "400" } });
}, 60_000);
afterAll(() => t.stop());

test("a signed, restricted stream: LIVE, live HLS only with a token, and a recording that inherits both", async () => {
  const key = (await ok(t.api("/signing-keys/", { method: "POST" }), "createSigningKey")).data;
  const restriction = (await ok(t.api("/playback-restrictions/", { method: "POST", json: { referrer: { allowed_domains: ["example.com"], allow_no_referrer: true } } }), "createPlaybackRestriction"))
    .data;
  const privateKey = await importPKCS8(Buffer.from(key.private_key, "base64").toString("ascii"), "RS256");
  const sign = (sub: string) => new SignJWT({ sub, aud: "v", exp: Math.floor(Date.now() / 1000) + 600 }).setProtectedHeader({ alg: "RS256", kid: key.id }).sign(privateKey);

  const s = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "Signed live", playback_policy: "signed", playback_restriction_id: restriction.id } }), "createLivestream")).data.stream;
  expect(s.playback_policy).toBe("signed");
  const pub = publish({ url: s.rtmp_url, form: "ffmpeg", tags: await fixtureTags(), pace: "realtime" });
  await pub.started;
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

  await pub.finished;
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
}, 300_000);
