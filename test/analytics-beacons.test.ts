/**
 * Issue 28, beacons and the analytics API without a browser (the players are
 * in test/analytics-players.test.ts): refusals, per-view figures from a
 * scripted view, countries from X-Forwarded-For with TRUST_PROXY, nothing of
 * the address or user agent stored, other organizations' ids and signed
 * assets without a token dropped, the per-address limit, the permission.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { importPKCS8, SignJWT } from "jose";
import { waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

const UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const LIMIT = 40;

describe("analytics beacons", () => {
  const files = startFileServer();
  let t: TestService;
  let video: string;
  let signedVideo: string;
  let stream: string;
  let other: { key: string; video: string };
  let signingKey: { id: string; private_key: string };

  // Answers of several shapes (beacon errors, analytics reads of videos, streams and the overview) read by one helper.
  const json = async (r: Response) => (await r.json()) as any;
  const beacon = (body: unknown, opts: { from?: string; raw?: boolean; contentType?: string } = {}) =>
    fetch(`${t.base}/beacons/`, {
      method: "POST",
      headers: { "content-type": opts.contentType ?? "text/plain;charset=UTF-8", "user-agent": UA, "x-forwarded-for": opts.from ?? "81.2.69.160" },
      body: opts.raw ? (body as string) : JSON.stringify(body),
    });
  /** A whole scripted view: 500 ms startup, 4.5 s playing at 720p, a 2 s stall, 5 s playing, viewend. */
  const view = (asset: Record<string, string>, viewId: string, extra: Record<string, unknown> = {}) => {
    const t0 = 1_700_000_000_000;
    const e = (type: string, dt: number, more: Record<string, unknown> = {}) => ({
      ...asset,
      view_id: viewId,
      viewer_id: `viewer-${viewId}`,
      type,
      t: t0 + dt,
      player_time: dt / 1000,
      ...extra,
      ...more,
    });
    return [
      e("viewstart", 0),
      e("rendition_change", 100, { height: 720, bitrate: 2_000_000 }),
      e("playing", 500, { startup_ms: 500 }),
      e("heartbeat", 4000),
      e("waiting", 5000),
      e("playing", 7000),
      e("viewend", 12000),
    ];
  };
  const analytics = async (path: string, key?: string) => json(await t.api(path, key ? { key } : {}));
  const videoFigures = (id: string, views: number, key?: string) =>
    waitFor(
      async () => {
        const d = (await analytics(`/videos/${id}/analytics/?granularity=minute&from=${new Date(Date.now() - 3600_000).toISOString()}`, key)).data;
        return d?.views === views ? d : undefined;
      },
      { timeoutMs: 30_000, what: `${views} views of ${id}` },
    );

  beforeAll(async () => {
    t = await startTestService({ env: { TRUST_PROXY: "1", ANALYTICS_CLOSE_INTERVAL_MS: "200", BEACONS_PER_MINUTE_PER_ADDRESS: String(LIMIT) } });
    // 404 sources: the videos settle in ERROR at once; their ids exist, which is all beacons need.
    const post = async (path: string, body: unknown, key?: string) => {
      const r = await t.api(path, { method: "POST", json: body, ...(key ? { key } : {}) });
      expect(r.status).toBe(201);
      return (await json(r)).data;
    };
    video = (await post("/videos/", { source_url: files.url("no-such-a.mp4") })).asset.public_id;
    signedVideo = (await post("/videos/", { source_url: files.url("no-such-s.mp4"), playback_policy: "signed" })).asset.public_id;
    stream = (await post("/livestreams/", { title: "analytics" })).stream.id;
    const r = await t.api("/signing-keys/", { method: "POST" });
    signingKey = (await json(r)).data;
    const b = await t.service.orgs.createOrg("org-b");
    other = { key: b.apiKey, video: (await post("/videos/", { source_url: files.url("no-such-b.mp4") }, b.apiKey)).asset.public_id };
  });
  afterAll(async () => {
    await t?.stop();
    files.stop();
  });

  test("bad bodies: 400 for not JSON, 422 naming the field, 413 past 64 KB, all in the envelope with CORS; the preflight is open", async () => {
    const notJson = await beacon("{nope", { raw: true, from: "10.0.0.1" });
    expect(notJson.status).toBe(400);
    expect(notJson.headers.get("access-control-allow-origin")).toBe("*");
    expect((await json(notJson)).error.code).toBe("BAD_REQUEST");
    const notArray = await beacon({ events: [] }, { from: "10.0.0.1" });
    expect(notArray.status).toBe(422);
    expect((await json(notArray)).error.details.body).toContain("array");
    const bad = await beacon(
      [
        { view_id: "v1", viewer_id: "x", video_id: video, type: "teleport", t: 1, player_time: 0 },
        { view_id: "v 2", viewer_id: "x", type: "playing", t: 1, player_time: 0 },
      ],
      { from: "10.0.0.1" },
    );
    expect(bad.status).toBe(422);
    const details = (await json(bad)).error.details;
    expect(details["[0].type"]).toBeDefined();
    expect(details["[1].view_id"]).toBeDefined();
    expect(details["[1].video_id"]).toContain("exactly one");
    const rendition = await beacon([{ view_id: "v1", viewer_id: "x", video_id: video, type: "rendition_change", t: 1, player_time: 0 }], { from: "10.0.0.1" });
    expect((await json(rendition)).error.details["[0].height"]).toBeDefined();
    const big = await beacon("x".repeat(65 * 1024), { raw: true, from: "10.0.0.1" });
    expect(big.status).toBe(413);
    const pre = await fetch(`${t.base}/beacons/`, { method: "OPTIONS", headers: { origin: "http://elsewhere.example", "access-control-request-method": "POST" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    // Nothing of the refused bodies was stored.
    const rows = await t.service.database.client.execute("SELECT count(*) AS n FROM analytics_event_batches");
    expect(Number(rows.rows[0]!.n)).toBe(0);
  });

  test("a scripted view's figures: watch time, startup, one stall, rebuffer ratio, rendition; two countries through X-Forwarded-For", async () => {
    expect((await beacon(view({ video_id: video }, "view-gb"), { from: "81.2.69.160" })).status).toBe(204);
    // The same view from another country, sent in two batches, with the client's own forged X-Forwarded-For entry ignored (TRUST_PROXY=1).
    const us = view({ video_id: video }, "view-us");
    expect((await beacon(us.slice(0, 3), { from: "81.2.69.160, 8.8.8.8" })).status).toBe(204);
    expect((await beacon(us.slice(3), { from: "8.8.8.8" })).status).toBe(204);
    const d = await videoFigures(video, 2);
    expect(d.unique_viewers).toBe(2);
    expect(d.watch_time_seconds).toBeCloseTo(2 * 9.5, 5);
    expect(d.startup_time_ms).toEqual({ p50: 500, p95: 500 });
    expect(d.rebuffer_ratio).toBeCloseTo(2 / 11.5, 5);
    expect(d.error_rate).toBe(0);
    expect(d.series.reduce((n: number, p: any) => n + p.views, 0)).toBe(2);
    expect(d.by.country.map((c: any) => c.value).sort()).toEqual(["GB", "US"]);
    expect(d.by.browser[0].value).toBe("Chrome");
    expect(d.by.os[0].value).toBe("Windows");
    expect(d.by.device_type[0].value).toBe("desktop");
    expect(d.by.rendition[0]).toMatchObject({ value: "720p", views: 2 });
    // No raw address or user agent anywhere in the analytics tables.
    for (const table of ["analytics_event_batches", "analytics_views", "analytics_rollups"]) {
      const dump = JSON.stringify((await t.service.database.client.execute(`SELECT * FROM ${table}`)).rows);
      expect(dump).not.toContain("8.8.8.8");
      expect(dump).not.toContain("81.2.69");
      expect(dump).not.toContain("Mozilla");
    }
  });

  test("unknown ids and another organization's ids: 204 and nothing counted for the caller; the other organization's analytics are a 404", async () => {
    expect((await beacon(view({ video_id: "vid_doesnotexist" }, "view-x"), { from: "5.9.0.2" })).status).toBe(204);
    expect((await beacon(view({ stream_id: video }, "view-kind"), { from: "5.9.0.2" })).status).toBe(204);
    expect((await beacon(view({ video_id: other.video }, "view-b"), { from: "5.9.0.2" })).status).toBe(204);
    // Organization B sees its own view; A cannot read B's video, and A's overview does not list it.
    await videoFigures(other.video, 1, other.key);
    expect((await t.api(`/videos/${other.video}/analytics/`)).status).toBe(404);
    expect((await t.api(`/videos/vid_doesnotexist/analytics/`)).status).toBe(404);
    expect((await t.api(`/livestreams/${video}/analytics/`)).status).toBe(404);
    const overview = (await analytics("/analytics/overview/")).data;
    expect(overview.top_videos.map((v: any) => v.id)).not.toContain(other.video);
    const stored = (await t.service.database.client.execute("SELECT DISTINCT asset_id FROM analytics_views")).rows.map((r) => r.asset_id);
    expect(stored).not.toContain("vid_doesnotexist");
  });

  test("a signed video's events count only with its playback token", async () => {
    expect((await beacon(view({ video_id: signedVideo }, "view-s1"), { from: "5.9.0.3" })).status).toBe(204);
    expect((await beacon(view({ video_id: signedVideo }, "view-s2", { token: "not-a-jwt" }), { from: "5.9.0.3" })).status).toBe(204);
    const pk = await importPKCS8(Buffer.from(signingKey.private_key, "base64").toString("ascii"), "RS256");
    const wrongSub = await new SignJWT({ sub: video, aud: "v", exp: Math.floor(Date.now() / 1000) + 600 }).setProtectedHeader({ alg: "RS256", kid: signingKey.id }).sign(pk);
    expect((await beacon(view({ video_id: signedVideo }, "view-s3", { token: wrongSub }), { from: "5.9.0.3" })).status).toBe(204);
    const token = await new SignJWT({ sub: signedVideo, aud: "v", exp: Math.floor(Date.now() / 1000) + 600 }).setProtectedHeader({ alg: "RS256", kid: signingKey.id }).sign(pk);
    expect((await beacon(view({ video_id: signedVideo }, "view-s4", { token }), { from: "5.9.0.3" })).status).toBe(204);
    const d = await videoFigures(signedVideo, 1);
    await Bun.sleep(1000);
    expect((await analytics(`/videos/${signedVideo}/analytics/`)).data.views).toBe(1);
    expect(d.unique_viewers).toBe(1);
  });

  test("a stream's concurrent viewers count open HLS views; overview totals; analytics.read is required", async () => {
    const now = Date.now();
    const open = (id: string) => [
      { stream_id: stream, view_id: id, viewer_id: id, type: "viewstart", t: now, player_time: 0 },
      { stream_id: stream, view_id: id, viewer_id: id, type: "playing", t: now + 300, player_time: 0, startup_ms: 300 },
    ];
    for (const id of ["live-1", "live-2", "live-3"]) expect((await beacon(open(id), { from: "5.9.0.4" })).status).toBe(204);
    const live = await waitFor(
      async () => {
        const d = (await analytics(`/livestreams/${stream}/analytics/?granularity=minute&from=${new Date(now - 600_000).toISOString()}`)).data;
        return d.concurrent_viewers.current === 3 ? d : undefined;
      },
      { timeoutMs: 20_000, what: "3 concurrent viewers" },
    );
    expect(live.concurrent_viewers.peak).toBe(3);
    expect(live.concurrent_viewers.series.some((p: any) => p.viewers === 3)).toBe(true);
    const overview = (await analytics("/analytics/overview/")).data;
    expect(overview.views).toBeGreaterThanOrEqual(3);
    expect(overview.top_videos[0]).toMatchObject({ id: video, views: 2 });
    // Granted less than every earlier permission, an organization does not get the later ones (org-settings.ts).
    await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, permissions: s.permissions.filter((p) => p !== "analytics.read" && p !== "videos.delete") }));
    const denied = await t.api(`/videos/${video}/analytics/`);
    expect(denied.status).toBe(403);
    expect((await json(denied)).error.details).toEqual(["analytics.read"]);
  });

  test("beacons are limited per client address (the X-Forwarded-For entry TRUST_PROXY names): 429 past the limit, another address unaffected", async () => {
    const one = [{ video_id: video, view_id: "rl", viewer_id: "rl", type: "heartbeat", t: Date.now(), player_time: 1 }];
    let refused: Response | null = null;
    for (let i = 0; i <= LIMIT && !refused; i++) {
      const r = await beacon(one, { from: "193.0.0.9" });
      if (r.status === 429) refused = r;
      else expect(r.status).toBe(204);
    }
    expect(refused?.status).toBe(429);
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await beacon(one, { from: "193.0.0.10" })).status).toBe(204);
  });

  // The beacon store writes group commits through its own connection (a worker thread) beside the process's write queue.
  test("beacons stored beside API writes: every write answers 201, every view is stored, each row's events as the JSON array of its tuples", async () => {
    const views = Array.from({ length: 30 }, (_, i) => view({ video_id: video }, `side-${i}`));
    const [sent, writes] = await Promise.all([
      Promise.all(views.map((events, i) => beacon(events, { from: `198.51.100.${i + 1}` }))),
      Promise.all(Array.from({ length: 8 }, (_, i) => t.api("/livestreams/", { method: "POST", json: { title: `beside beacons ${i}` } }))),
    ]);
    expect(sent.map((r) => r.status)).toEqual(views.map(() => 204));
    expect(writes.map((r) => r.status)).toEqual(writes.map(() => 201));
    await t.service.analytics.writer.flush();
    const stored = await t.service.database.client.execute("SELECT view_id, events FROM analytics_event_batches WHERE view_id LIKE 'side-%'");
    expect(new Set(stored.rows.map((r) => r.view_id)).size).toBe(30);
    const first = stored.rows.find((r) => r.view_id === "side-0")!;
    expect(JSON.parse(String(first.events))[0]).toEqual(["viewstart", 1_700_000_000_000, 0, null, null, null, null]);
  });
});
