import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { webrtcAvailability } from "../src/webrtc/availability.ts";
import { hasChromium } from "./support/browser.ts";
import { requestFrom } from "./support/http-from.ts";
import { getStream, streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { startWebrtcBrowser, type WebrtcBrowser, whipAnswer, whipOffer, ffmpegTestPublish } from "./support/webrtc-pages.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * WHIP under the RTMP connection limits (RTMP_MAX_CONNECTIONS_PER_IP=1):
 * a WHIP publish is admitted or refused before its 201, by its client's own
 * address (the POSTs come from 127.0.0.2 / 127.0.0.3 through node:net), and
 * its relay's connection from 127.0.0.1 does not count, while a local ffmpeg
 * publisher from 127.0.0.1 is still held to the cap.
 */
const ready = hasChromium && webrtcAvailability().available && !!Bun.which("ffmpeg");
if (!ready) console.warn("webrtc-whip-admission skipped: needs /usr/bin/chromium, ffmpeg and the mediasoup worker (npm run setup:webrtc)");

let t: TestService;
let b: WebrtcBrowser;

beforeAll(async () => {
  if (!ready) return;
  t = await startTestService({ env: { LIVE_RECONNECT_MS: "500", WEBRTC_PORT: "0", RTMP_MAX_CONNECTIONS_PER_IP: "1" } });
  b = await startWebrtcBrowser();
});
afterAll(async () => {
  await b?.close();
  await t?.stop({ cleanup: true });
});

async function createStream(title: string, service = t) {
  const res = await service.api("/livestreams/", { method: "POST", json: { title, latency: "LOW" } });
  expect(res.status).toBe(201);
  return (await ok(res, "createLivestream")).data.stream;
}

/** A Chromium page's WHIP offer POSTed from `from`; on 201 the page takes the answer and sends media. */
async function whipFrom(from: string, stream: { whip_url: string | null; stream_key: string }, headers: Record<string, string> = {}) {
  const page = await b.page();
  const offer = await whipOffer(page);
  const res = await requestFrom(from, stream.whip_url!, { method: "POST", headers: { authorization: `Bearer ${stream.stream_key}`, "content-type": "application/sdp", ...headers }, body: offer });
  if (res.status === 201) await whipAnswer(page, res.body);
  return { page, res };
}

describe.skipIf(!ready)("WHIP and the RTMP per-IP connection cap", () => {
  test("a second WHIP publisher from the same address is refused before any 201 (429 RATE_LIMITED); the first goes LIVE", async () => {
    const [s1, s2] = [await createStream("WHIP one"), await createStream("WHIP two")];
    const first = await whipFrom("127.0.0.2", s1);
    expect(first.res.status).toBe(201);
    const second = await whipFrom("127.0.0.2", s2);
    expect(second.res.status).toBe(429);
    expect(second.res.headers["retry-after"]).toMatch(/^\d+$/);
    expect(JSON.parse(second.res.body)).toMatchObject({ success: false, error: { code: "RATE_LIMITED" } });
    // The first one's relay (from 127.0.0.1) got in; the refused one holds nothing.
    await streamIn(t, s1.id, ["LIVE"], 60_000);
    expect((await getStream(t, s2.id)).status).toBe("READY_TO_STREAM");
    expect(t.service.rtc.publishing(s2.id)).toBe(false);

    // Over: the address has its place back.
    expect((await fetch(new URL(first.res.headers.location!), { method: "DELETE" })).status).toBe(200);
    await streamIn(t, s1.id, ["ENDED"], 60_000);
    const again = await whipFrom("127.0.0.2", s2);
    expect(again.res.status).toBe(201);
    await streamIn(t, s2.id, ["LIVE"], 60_000);
    expect((await fetch(new URL(again.res.headers.location!), { method: "DELETE" })).status).toBe(200);
    await streamIn(t, s2.id, ["ENDED"], 60_000);
    await Promise.all([first.page.close(), second.page.close(), again.page.close()]);
  }, 120_000);

  test("an RTMP ffmpeg publisher and a WHIP publisher both go LIVE (the relay is not counted); another local RTMP publisher is refused", async () => {
    const [rtmp, whip, extra] = [await createStream("RTMP"), await createStream("WHIP"), await createStream("RTMP extra")];
    const ff = ffmpegTestPublish(rtmp.rtmp_url, { seconds: 60, size: "320x180", fps: 25, audioKbps: 64 });
    let pub: Awaited<ReturnType<typeof whipFrom>> | undefined;
    try {
      // ffmpeg holds 127.0.0.1's only place.
      await streamIn(t, rtmp.id, ["LIVE"], 60_000);
      pub = await whipFrom("127.0.0.3", whip);
      expect(pub.res.status).toBe(201);
      // Its relay connects from 127.0.0.1 too, and is let in on the WHIP session's seat.
      await streamIn(t, whip.id, ["LIVE"], 60_000);
      expect((await getStream(t, rtmp.id)).status).toBe("LIVE");

      // Exempting the relay did not exempt loopback: a second local ffmpeg is closed on accept.
      const refused = ffmpegTestPublish(extra.rtmp_url, { seconds: 10, size: "320x180", fps: 25, audioKbps: 64 });
      const code = await Promise.race([refused.exited, Bun.sleep(20_000).then(() => "still running")]);
      if (code === "still running") refused.kill();
      expect(code).not.toBe(0);
      expect(code).not.toBe("still running");
      expect((await getStream(t, extra.id)).status).toBe("READY_TO_STREAM");
      expect((await fetch(new URL(pub.res.headers.location!), { method: "DELETE" })).status).toBe(200);
      await streamIn(t, whip.id, ["ENDED"], 60_000);
    } finally {
      ff.kill();
      await ff.exited;
      await pub?.page.close();
    }
  }, 120_000);
});

describe.skipIf(!ready)("WHIP behind a reverse proxy (TRUST_PROXY=1)", () => {
  test("clients behind one proxy address are counted apart by the X-Forwarded-For entry the proxy appended; a forged entry to its left is not", async () => {
    const proxied = await startTestService({ env: { LIVE_RECONNECT_MS: "500", WEBRTC_PORT: "0", RTMP_MAX_CONNECTIONS_PER_IP: "1", TRUST_PROXY: "1" } });
    const pubs: Array<Awaited<ReturnType<typeof whipFrom>>> = [];
    try {
      const [s1, s2, s3] = [await createStream("A", proxied), await createStream("B", proxied), await createStream("C", proxied)];
      // Every POST comes from the proxy's one address; the client is the rightmost forwarded entry.
      pubs.push(await whipFrom("127.0.0.2", s1, { "x-forwarded-for": "198.51.100.7" }));
      pubs.push(await whipFrom("127.0.0.2", s2, { "x-forwarded-for": "198.51.100.8" }));
      pubs.push(await whipFrom("127.0.0.2", s3, { "x-forwarded-for": "203.0.113.9, 198.51.100.7" }));
      expect(pubs.map((p) => p.res.status)).toEqual([201, 201, 429]);
      for (const p of pubs.slice(0, 2)) expect((await fetch(new URL(p.res.headers.location!), { method: "DELETE" })).status).toBe(200);
    } finally {
      await Promise.all(pubs.map((p) => p.page.close()));
      await proxied.stop({ cleanup: true });
    }
  }, 120_000);
});
