/**
 * The RTMP limits through the real service: per-IP cap and publish deadline
 * against a crowd of trickling sockets (RTMP_MAX_CONNECTIONS_PER_IP,
 * RTMP_PUBLISH_DEADLINE_MS), and the ingest bitrate cap (LIVE_MAX_BITRATE_KBPS)
 * on a real broadcast and its recording file.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { RtmpConnectionClosedError } from "../media/rtmp/errors.ts";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags, looped, padWithFiller, Trickler } from "../media/rtmp/test-support.ts";
import { createLogger } from "../src/log.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

let t: TestService;
const logs: Array<Record<string, any>> = [];
const tags = await fixtureTags();
const tricklers: Trickler[] = [];

beforeAll(async () => {
  t = await startTestService({
    env: { RTMP_PUBLISH_DEADLINE_MS: "1500", LIVE_MAX_BITRATE_KBPS: "1200", LIVE_RECONNECT_MS: "4000" },
    logger: createLogger({ level: "info", write: (line) => logs.push(JSON.parse(line)) }),
  });
});
afterAll(async () => {
  for (const tr of tricklers) tr.destroy();
  await t.stop();
});

async function createStream(title: string) {
  const res = await t.api("/livestreams/", { method: "POST", json: { title } });
  expect(res.status).toBe(201);
  return (await ok(res, "createLivestream")).data.stream;
}

const streamStatus = (id: string, status: string, timeoutMs: number) =>
  waitFor(
    async () => {
      const s = (await ok(t.api(`/livestreams/${id}/`), "getLivestream")).data?.stream;
      return s?.status === status ? s : undefined;
    },
    { timeoutMs, what: `stream ${id} ${status}` },
  );

test("200 unauthenticated sockets trickling bytes from 8 IPs: 20 per IP get in, the stream still goes LIVE, all are closed at the deadline", async () => {
  const rtmpPort = t.service.config.rtmpPort;
  const crowd: Trickler[] = [];
  for (let i = 0; i < 200; i += 50) {
    crowd.push(...(await Promise.all(Array.from({ length: 50 }, (_, j) => Trickler.open(rtmpPort, `127.0.0.${2 + ((i + j) % 8)}`, { intervalMs: 300 })))));
  }
  tricklers.push(...crowd);
  await waitFor(async () => crowd.filter((c) => c.handshaken).length === 160, { timeoutMs: 5000, what: "20 per IP accepted" });
  await waitFor(async () => crowd.filter((c) => c.isClosed).length === 40, { timeoutMs: 5000, what: "the 21st-25th per IP closed at once" });
  const refused = logs.filter((l) => l.level === "warn" && l.event === "rtmp.refused");
  expect(refused.length).toBeGreaterThan(0);
  expect(refused.length).toBeLessThanOrEqual(8); // once per IP and burst, not once per socket
  expect(refused[0]).toMatchObject({ reason: "per-ip limit", limit: 20, remoteAddress: expect.stringMatching(/^127\.0\.0\.\d+$/) });

  const stream = await createStream("Through the crowd");
  const pub = publish({ url: stream.rtmp_url, tags, pace: "realtime" });
  await pub.started;
  expect(crowd.filter((c) => c.handshaken && !c.isClosed)).toHaveLength(160); // they were all still there
  await streamStatus(stream.id, "LIVE", 15_000);
  await waitFor(async () => crowd.every((c) => c.isClosed), { timeoutMs: 6000, what: "every trickler closed" });
  for (const c of crowd.filter((c) => c.handshaken)) expect(c.closedAt! - c.openedAt).toBeGreaterThanOrEqual(1400);
  expect((await pub.finished).tagsSent).toBe(tags.length);
  await streamStatus(stream.id, "ENDED", 15_000);
}, 60_000);

describe("ingest bitrate cap", () => {
  test("a publisher at ~6x LIVE_MAX_BITRATE_KBPS is disconnected, its recording stops growing, the reason is logged; one under the cap is unaffected", async () => {
    const [heavyStream, lightStream] = [await createStream("Heavy"), await createStream("Light")];
    // The fixture is ~0.96 Mbit/s (under the 1.2 Mbit/s cap, for 12 s: more than the 5 s burst allowance);
    // 30 kB of H.264 filler per video frame makes the heavy one ~7 Mbit/s, at real-time timestamps.
    const light = publish({ url: lightStream.rtmp_url, tags: looped(tags, 2), pace: "realtime" });
    const heavy = publish({ url: heavyStream.rtmp_url, tags: looped(padWithFiller(tags, 30_000), 3), pace: "realtime" });
    await Promise.all([light.started, heavy.started]);
    await expect(Promise.race([heavy.finished, Bun.sleep(10_000).then(() => "still publishing")])).rejects.toBeInstanceOf(RtmpConnectionClosedError);

    // The FLV recording is watched within the reconnect window (4 s); after it the recording enters the library.
    const recording = join(t.dataDir, "recordings", `${heavyStream.id}.flv`);
    await Bun.sleep(300);
    const sizeAtCut = (await stat(recording)).size;
    expect(sizeAtCut).toBeGreaterThan(0);
    await Bun.sleep(1500);
    expect((await stat(recording)).size).toBe(sizeAtCut);
    // Ended by the pipeline after the reconnect window, like any publisher that left.
    await streamStatus(heavyStream.id, "ENDED", 15_000);

    const cut = logs.find((l) => l.event === "rtmp.bitrate.exceeded");
    expect(cut).toMatchObject({ level: "warn", msg: "Publisher disconnected: bitrate above the limit", stream_id: heavyStream.id, limitKbps: 1200 });
    expect(cut!.measuredKbps).toBeGreaterThan(1200);
    expect(logs.some((l) => l.stream_id === heavyStream.id && l.reason === "bitrate" && l.msg.startsWith("Publisher left"))).toBe(true);

    const summary = await light.finished;
    expect(summary).toMatchObject({ ended: "completed", tagsSent: [...looped(tags, 2)].length });
    expect(logs.filter((l) => l.event === "rtmp.bitrate.exceeded")).toHaveLength(1);
    expect(logs.some((l) => l.stream_id === lightStream.id && l.reason === "bitrate")).toBe(false);
  }, 60_000);
});
