import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { webrtcAvailability } from "../src/webrtc/availability.ts";
import { waitFor } from "./support/events.ts";
import { streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ffmpegTestPublish } from "./support/webrtc-pages.ts";
import { failed, ok } from "./support/api.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 23 item 5, black-box: unauthenticated WHEP offers (no browser: an
 * offer is only text) against a stream on air. Each distinct payload-type
 * pair used to create a mediasoup router that was never freed; now routers
 * are per stream and mapping and closed with their last viewer, counted by
 * /metrics `vidlive_webrtc_routers` (the ingest router is 1). Offers with
 * numbers out of range, or one payload type for audio and video, are 422.
 */
const ready = webrtcAvailability().available && !!Bun.which("ffmpeg");
if (!ready) console.warn("webrtc-whep-offers skipped: needs ffmpeg and the mediasoup worker (npm run setup:webrtc)");

const FINGERPRINT = Array.from({ length: 32 }, (_, i) => ((i * 37) & 0xff).toString(16).padStart(2, "0").toUpperCase()).join(":");

/** A WHEP offer as a browser sends one (recvonly audio + video, bundle, rtcp-mux), with the payload types given. */
function offer(o: { opus: number | string; h264: number | string; port?: number | string; fingerprint?: string }): string {
  const session = ["v=0", `o=- ${Date.now()} 2 IN IP4 127.0.0.1`, "s=-", "t=0 0", "a=group:BUNDLE 0 1", `a=fingerprint:${o.fingerprint ?? `sha-256 ${FINGERPRINT}`}`];
  const common = (mid: string) => ["c=IN IP4 0.0.0.0", "a=ice-ufrag:abcd", "a=ice-pwd:abcdefghijklmnopqrstuvwx", "a=setup:actpass", `a=mid:${mid}`, "a=recvonly", "a=rtcp-mux"];
  const audio = [`m=audio ${o.port ?? 9} UDP/TLS/RTP/SAVPF ${o.opus}`, ...common("0"), `a=rtpmap:${o.opus} opus/48000/2`, `a=fmtp:${o.opus} minptime=10;useinbandfec=1`];
  const video = [
    `m=video 9 UDP/TLS/RTP/SAVPF ${o.h264}`,
    ...common("1"),
    `a=rtpmap:${o.h264} H264/90000`,
    `a=fmtp:${o.h264} level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f`,
    `a=rtcp-fb:${o.h264} nack pli`,
  ];
  return `${[...session, ...audio, ...video].join("\r\n")}\r\n`;
}

const post = (url: string, body: string) => fetch(url, { method: "POST", headers: { "content-type": "application/sdp" }, body });

async function routers(t: TestService): Promise<number> {
  const text = await (await fetch(`${t.base}/metrics`)).text();
  const m = /^vidlive_webrtc_routers (\d+)/m.exec(text);
  if (!m) throw new Error("no vidlive_webrtc_routers in /metrics");
  return Number(m[1]);
}

let t: TestService;
beforeAll(async () => {
  if (!ready) return;
  t = await startTestService({ env: { WEBRTC_PORT: "0", LIVE_RECONNECT_MS: "500" } });
});
afterAll(async () => {
  await t?.stop({ cleanup: true });
});

describe.skipIf(!ready)("WHEP offers cannot pile up routers", () => {
  test("distinct payload-type pairs: a router per stream and pair while viewers hold it, all freed when they go (DELETE or never connecting); bad numbers and a shared payload type are 422", async () => {
    const s = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "Offers" } }), "createLivestream")).data.stream;
    const ff = ffmpegTestPublish(s.rtmp_url, { seconds: 90, size: "320x180", fps: 15, audioKbps: 64 });
    try {
      await streamIn(t, s.id, ["LIVE"], 30_000);
      // 20 distinct (opus, h264) pairs, each offered twice in a row: a pair's second viewer shares its router.
      // (Sessions that never connect are dropped after 20 s, so on a slow machine early ones may already be gone:
      // the checks hold either way.)
      const pairs = Array.from({ length: 20 }, (_, i) => ({ opus: 96 + i, h264: 127 - i }));
      const sessions: string[] = [];
      let most = 0;
      for (const pair of pairs) {
        const first = await post(s.whep_url!, offer(pair));
        expect(first.status).toBe(201);
        const withFirst = await routers(t);
        expect(withFirst).toBeGreaterThanOrEqual(2);
        const second = await post(s.whep_url!, offer(pair));
        expect(second.status).toBe(201);
        expect(await routers(t)).toBeLessThanOrEqual(withFirst);
        sessions.push(first.headers.get("location")!, second.headers.get("location")!);
        most = Math.max(most, withFirst);
      }
      // Never more than the ingest router + one per pair of this stream.
      expect(most).toBeLessThanOrEqual(1 + pairs.length);

      // The numbers the worker would choke on, and one payload type for both kinds: the offer's fault.
      const refused = [
        offer({ opus: 111, h264: 111 }),
        offer({ opus: 300, h264: 102 }),
        offer({ opus: 111, h264: -5 }),
        offer({ opus: 111, h264: "x" }),
        offer({ opus: 111, h264: 102, port: 70000 }),
        offer({ opus: 111, h264: 102, fingerprint: "sha-256 AB:CD" }),
        offer({ opus: 111, h264: 102, fingerprint: `md5 ${FINGERPRINT}` }),
      ];
      for (const body of refused) {
        const res = await post(s.whep_url!, body);
        expect(res.status).toBe(422);
        expect((await failed(res)).error.code).toBe("VALIDATION_ERROR");
      }

      // Every session DELETEd (404: already dropped for never connecting): the viewer routers go with them.
      for (const url of sessions) expect([200, 404]).toContain((await fetch(url, { method: "DELETE" })).status);
      await waitFor(async () => ((await routers(t)) === 1 ? true : undefined), { timeoutMs: 45_000, what: "viewer routers freed by DELETE" });

      // Ten more pairs whose viewers never connect (no DTLS) and never DELETE: dropped at the 20 s connect deadline.
      for (let i = 0; i < 10; i++) expect((await post(s.whep_url!, offer({ opus: 100 + i, h264: 120 - i }))).status).toBe(201);
      expect(await routers(t)).toBeGreaterThan(1);
      await waitFor(async () => ((await routers(t)) === 1 ? true : undefined), { timeoutMs: 60_000, what: "viewer routers freed at the connect deadline" });
      const after = (await ok(t.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream;
      expect(after.webrtc_viewers).toBe(0);
    } finally {
      ff.kill();
      await ff.exited;
    }
  }, 150_000);
});
