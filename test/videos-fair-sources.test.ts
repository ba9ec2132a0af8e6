import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { asc, eq } from "drizzle-orm";
import { work, outbox } from "../src/db/schema/index.ts";
import { waitFor } from "./support/events.ts";
import { startHostileOrigin } from "./support/hostile-origin.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * Sources and transcode workers are shared fairly: fetching is its own stage
 * with its own pool and per-organization share, silence fails fast, and
 * transcode claims go round-robin between organizations. One transcode
 * worker throughout, so any worker held by a fetch or by one organization's
 * queue shows.
 */
const origin = startHostileOrigin({ trickleMs: 200 });
let t: TestService;

beforeAll(async () => {
  t = await startTestService({
    env: {
      MEDIA_BACKEND: "native",
      TRANSCODE_WORKERS: "1",
      SOURCE_STALL_MS: "1000",
      SOURCE_FETCH_CONCURRENCY: "4",
      SOURCE_FETCH_PER_ORG: "2",
    },
  });
});
afterAll(async () => {
  await t.stop();
  origin.stop();
});

async function newOrg(name: string): Promise<string> {
  const { org, apiKey } = await t.service.orgs.createOrg(name);
  await t.service.orgs.updateSettings(org.id, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 1_000_000, videosCreatePerMinute: 1_000 } }));
  return apiKey;
}

async function register(sourceUrl: string, key?: string): Promise<string> {
  const res = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl }, key });
  const body = await ok(res, "createVideo");
  expect(res.status).toBe(201);
  return body.data.asset.public_id;
}

async function read(id: string, key?: string): Promise<any> {
  return (await ok(t.api(`/videos/${id}/`, { key }), "getVideo")).data;
}

async function settled(id: string, key?: string, timeoutMs = 60_000): Promise<any> {
  return waitFor(
    async () => {
      const d = await read(id, key);
      return d.video.status !== "TRANSCODING" ? d : undefined;
    },
    { timeoutMs, what: `video ${id} settled` },
  );
}

async function remove(id: string, key?: string) {
  expect((await t.api(`/videos/${id}/`, { method: "DELETE", key })).status).toBe(200);
}

describe("fetching a source is its own stage", () => {
  test("a trickling source does not hold the only transcode worker: another video completes meanwhile", async () => {
    const slow = await register(origin.url("trickle/slow.mp4"));
    await waitFor(async () => origin.openTrickles() === 1, { what: "the trickle being fetched" });
    const good = await register(origin.url("files/av-360p-2s.mp4"));
    const done = await settled(good);
    expect(done.video.status).toBe("COMPLETED");
    // Every byte restarts the stall timer: well past SOURCE_STALL_MS (1 s) of fetching, a
    // trickle is still being fetched (not failed, not started); SOURCE_TIMEOUT_MS bounds it.
    await Bun.sleep(2_500);
    const still = await read(slow);
    expect(still.video.status).toBe("TRANSCODING");
    expect(still.video.transcoder_id).toBeUndefined();
    expect(origin.openTrickles()).toBe(1);
    // Deleting it cancels the fetch.
    await remove(slow);
    await waitFor(async () => origin.openTrickles() === 0, { what: "the trickle fetch cancelled" });
  }, 90_000);

  test("a source that sends nothing for SOURCE_STALL_MS fails with SOURCE_FETCH_TIMEOUT, after its headers or before them", async () => {
    const silent = await register(origin.url("silent/a.mp4"));
    const noHeaders = await register(origin.url("no-headers/b.mp4"));
    for (const id of [silent, noHeaders]) {
      const d = await settled(id, undefined, 20_000);
      expect(d.video.status).toBe("ERROR");
      expect(d.error.code).toBe("SOURCE_FETCH_TIMEOUT");
      // Permanent: one attempt.
      const [row] = await t.service.database.db.select().from(work).where(eq(work.entityId, id));
      expect(row!.attempts).toBe(1);
    }
  }, 120_000);

  test("one organization's slow sources take at most its share of the fetch pool; another organization's source is fetched and transcoded", async () => {
    const keyA = await newOrg("slow-sources");
    const keyB = await newOrg("normal");
    // More slow sources than the whole pool (4).
    const slow: string[] = [];
    for (let i = 0; i < 5; i++) slow.push(await register(origin.url(`trickle/a${i}.mp4?group=A`), keyA));
    await waitFor(async () => origin.openTrickles("A") === 2, { what: "org A's share in use" });
    const good = await register(origin.url("files/av-360p-2s.mp4?b"), keyB);
    expect((await settled(good, keyB)).video.status).toBe("COMPLETED");
    expect(origin.maxOpenTrickles("A")).toBe(2);
    for (const id of slow) expect((await read(id, keyA)).video.status).toBe("TRANSCODING");
    for (const id of slow) await remove(id, keyA);
    await waitFor(async () => origin.openTrickles("A") === 0, { what: "org A's fetches cancelled" });
  }, 90_000);
});

describe("transcode workers are shared between organizations", () => {
  test("org A queues 4 videos, then org B one: B's transcode starts before A's queue drains", async () => {
    const keyA = await newOrg("busy");
    const keyB = await newOrg("small");
    const a: string[] = [];
    for (let i = 0; i < 4; i++) a.push(await register(origin.url(`files/av-360p-2s.mp4?fair-a${i}`), keyA));
    const b = await register(origin.url("files/av-360p-2s.mp4?fair-b"), keyB);
    for (const id of [...a, b]) expect((await settled(id, id === b ? keyB : keyA, 120_000)).video.status).toBe("COMPLETED");
    const started = (await t.service.database.db.select().from(outbox).where(eq(outbox.event, "VIDEO_TRANSCODING_STARTED")).orderBy(asc(outbox.seq)))
      .map((r) => r.entityId)
      .filter((id) => [...a, b].includes(id));
    expect(started).toHaveLength(5);
    // FIFO would start B last (index 4). Round-robin: at most the one A video already running when B arrived goes first.
    expect(started.indexOf(b)).toBeLessThanOrEqual(1);
  }, 150_000);
});

describe("permanent source failures", () => {
  test("a redirect loop is SOURCE_FETCH_FAILED at the first attempt", async () => {
    const id = await register(origin.url("loop/self.mp4"));
    const d = await settled(id);
    expect(d.error.code).toBe("SOURCE_FETCH_FAILED");
    const [row] = await t.service.database.db.select().from(work).where(eq(work.entityId, id));
    expect(row!.attempts).toBe(1);
    expect(origin.hits("/loop/self.mp4")).toBe(6); // the first request and 5 redirects, once
  });

  test("a host name that does not resolve is SOURCE_FETCH_FAILED at the first attempt, with or without ALLOW_PRIVATE_NETWORK", async () => {
    const id = await register("http://no-such-host.invalid/video.mp4");
    const d = await settled(id);
    expect(d.error.code).toBe("SOURCE_FETCH_FAILED");
    const [row] = await t.service.database.db.select().from(work).where(eq(work.entityId, id));
    expect(row!.attempts).toBe(1);

    // With the SSRF guard resolving the name itself: not SOURCE_URL_REFUSED.
    const guarded = await startTestService({ env: { MEDIA_BACKEND: "native", ALLOW_PRIVATE_NETWORK: "0" } });
    try {
      const res = await guarded.api("/videos/", { method: "POST", json: { source_url: "https://also-missing.invalid/v.mp4" } });
      const gid = (await ok(res, "createVideo")).data.asset.public_id;
      const gd = await waitFor(async () => {
        const b = (await ok(guarded.api(`/videos/${gid}/`), "getVideo")).data;
        return b.video.status !== "TRANSCODING" ? b : undefined;
      });
      expect(gd.error!.code).toBe("SOURCE_FETCH_FAILED");
      const [grow] = await guarded.service.database.db.select().from(work).where(eq(work.entityId, gid));
      expect(grow!.attempts).toBe(1);
    } finally {
      await guarded.stop();
    }
  });
});
