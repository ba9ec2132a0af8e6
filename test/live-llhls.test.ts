import { ok } from "./support/api.ts";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import HLS from "hls-parser";
import type { LlHlsPartInfo } from "../media/hls/ll-hls-packager.ts";
import { playlistEdge } from "../media/hls/ll-playlist.ts";
import { publish, type Publication } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags, looped } from "../media/rtmp/test-support.ts";
import { waitFor } from "./support/events.ts";
import { median, startLlHlsPlayer } from "./support/llhls-player.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

/**
 * Issue 26 item 4: the live playlist is LL-HLS (parts, blocking reload,
 * preload hint) and hls.js plays it in low-latency mode. One service, one
 * real-time RTMP broadcast (the 6 s fixture looped), one browser.
 */
setDefaultTimeout(120_000);

let t: TestService;
let pub: Publication;
let hlsUrl: string;
const written = new Map<string, LlHlsPartInfo>();

beforeAll(async () => {
  t = await startTestService();
  t.service.live.onPart((_id, info) => written.set(`${info.sequence}.${info.part}`, info));
  const s = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "LL" } }), "createLivestream")).data.stream;
  hlsUrl = s.hls_url;
  pub = publish({ url: s.rtmp_url, tags: looped(await fixtureTags(), 4), pace: "realtime" });
  await pub.started;
  await waitFor(async () => ((await fetch(hlsUrl)).ok ? true : undefined), { timeoutMs: 30_000, what: "live playlist" });
});
afterAll(async () => {
  await pub?.close().catch(() => {});
  await t?.stop();
});

describe("LL-HLS live playlist", () => {
  test("carries PART-INF, SERVER-CONTROL (blocking reload, PART-HOLD-BACK), parts and a preload hint; whole segments stay listed", async () => {
    const text = await waitFor(
      async () => {
        const x = await (await fetch(hlsUrl)).text();
        return playlistEdge(x).lastMsn >= 0 ? x : undefined;
      },
      { timeoutMs: 30_000, what: "a whole segment" },
    );
    const p = HLS.parse(text) as HLS.types.MediaPlaylist;
    expect(p.partTargetDuration!).toBeLessThanOrEqual(0.5);
    expect(p.lowLatencyCompatibility?.canBlockReload).toBe(true);
    expect(p.lowLatencyCompatibility!.partHoldBack!).toBeGreaterThanOrEqual(3 * p.partTargetDuration!);
    expect(p.segments[0]!.uri).toMatch(/^segment-\d+\.m4s$/);
    expect(p.segments[0]!.duration).toBeGreaterThan(1.5);
    expect(text).toMatch(/#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-\d+-\d+\.m4s"/);
    for (const x of p.segments.flatMap((s) => s.parts)) if (!x.hint) expect(x.duration!).toBeLessThanOrEqual(p.partTargetDuration!);
  });

  test("a blocking reload for the next part is held until the part is written, then lists it; far ahead or malformed is 400", async () => {
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const edge = playlistEdge(await (await fetch(hlsUrl)).text());
      const msn = edge.lastMsn + 1;
      const part = edge.openParts;
      const url = `${hlsUrl}?_HLS_msn=${msn}&_HLS_part=${part}`;
      const res = await fetch(url);
      const answeredAt = Date.now();
      expect(res.status).toBe(200);
      const body = await res.text();
      // The part asked for, or the segment it ended (the part was its last).
      expect(body.includes(`URI="part-${msn}-${part}.m4s"`) || playlistEdge(body).lastMsn >= msn).toBe(true);
      const info = written.get(`${msn}.${part}`) ?? written.get(`${msn + 1}.0`);
      if (info) delays.push(answeredAt - info.publishedAtMs);
    }
    console.log(`[live-llhls] blocking reload answered ${delays.map((d) => `${d} ms`).join(", ")} after the part was written (median ${median(delays)} ms)`);
    expect(delays.length).toBeGreaterThan(0);

    const edge = playlistEdge(await (await fetch(hlsUrl)).text());
    expect((await fetch(`${hlsUrl}?_HLS_msn=${edge.lastMsn + 5}`)).status).toBe(400);
    expect((await fetch(`${hlsUrl}?_HLS_part=1`)).status).toBe(400);
    expect((await fetch(`${hlsUrl}?_HLS_msn=x`)).status).toBe(400);
  });

  test("the preload-hinted part is held until written, then served", async () => {
    const text = await (await fetch(hlsUrl)).text();
    const hinted = /PRELOAD-HINT:TYPE=PART,URI="([^"]+)"/.exec(text)![1]!;
    const res = await fetch(new URL(hinted, hlsUrl));
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer()).slice(4, 8)).toEqual(new TextEncoder().encode("moof"));
  });

  test("hls.js with lowLatencyMode plays it from parts over blocking reloads and reports its latency", async () => {
    const player = await startLlHlsPlayer();
    try {
      const r = await player.watch(hlsUrl, { seconds: 6, timeoutMs: 60_000 });
      console.log(`[live-llhls] hls.latency median ${median(r.latencies).toFixed(2)} s over ${r.latencies.length} samples; ${r.parts} parts, ${r.segments} segments, ${r.blocking} blocking reloads`);
      expect(r.errors).toEqual([]);
      expect(r.canBlockReload).toBe(true);
      expect(r.parts).toBeGreaterThan(0);
      expect(r.blocking).toBeGreaterThan(0);
      expect(r.latencies.length).toBeGreaterThan(0);
    } finally {
      await player.close();
    }
  });
});
