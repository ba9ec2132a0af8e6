/**
 * Issue 28, "three processes on sqld count each view once": the beacons of
 * the same views spread over three service processes' `/beacons/` (each
 * view's events, its `viewend` included, reach all three), every process's
 * closer sweeping the shared database at once; then the analytics API of
 * every process reports the exact views and watch time, the same figures.
 */
import { ok } from "./support/api.ts";
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "@libsql/client";
import { type Cluster, startCluster } from "./support/cluster.ts";
import { waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import type { Child } from "./support/service-process.ts";

setDefaultTimeout(120_000);

const VIEWS = 30;
const files = startFileServer();
let cluster: Cluster;
let children: Child[];
let video: string;

beforeAll(async () => {
  cluster = await startCluster({ name: "analytics-cluster", env: { ANALYTICS_CLOSE_INTERVAL_MS: "200", TRANSCODE_WORKERS: "0" } });
  children = [await cluster.spawn(), await cluster.spawn(), await cluster.spawn()];
  // A 404 source: the video settles in ERROR; its id exists, which is all beacons need.
  video = (await ok(children[0]!.api("/videos/", { method: "POST", json: { source_url: files.url("no-such.mp4") } }), "createVideo")).data.asset.public_id;
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
  files.stop();
});

/** A scripted view: 500 ms startup, a 2 s stall, viewend at 12 s: 9.5 s watched, 2 s stalled. */
function view(n: number) {
  const t0 = Date.now() - 60_000;
  const e = (type: string, dt: number, more: Record<string, unknown> = {}) => ({
    video_id: video,
    view_id: `view-${n}`,
    viewer_id: `viewer-${n % 10}`,
    type,
    t: t0 + dt,
    player_time: dt / 1000,
    ...more,
  });
  return [e("viewstart", 0), e("playing", 500, { startup_ms: 500 }), e("heartbeat", 4000), e("waiting", 5000), e("playing", 7000), e("heartbeat", 10_000), e("viewend", 12_000)];
}

const post = (child: Child, events: unknown[]) =>
  fetch(`${child.base}/beacons/`, { method: "POST", headers: { "content-type": "text/plain;charset=UTF-8", "x-forwarded-for": "81.2.69.160" }, body: JSON.stringify(events) });

test("views whose beacons reach three processes are each counted once, with the same figures on every process", async () => {
  const views = Array.from({ length: VIEWS }, (_, n) => view(n));
  // Every event but the last goes to process (n + i) % 3, all at once; then each viewend, to yet another process.
  const early = views.flatMap((events, n) => events.slice(0, -1).map((e, i) => ({ child: children[(n + i) % 3]!, e })));
  const sent = await Promise.all(early.map(({ child, e }) => post(child, [e])));
  expect(sent.every((r) => r.status === 204)).toBe(true);
  const ends = await Promise.all(views.map((events, n) => post(children[(n + 2) % 3]!, events.slice(-1))));
  expect(ends.every((r) => r.status === 204)).toBe(true);

  const from = new Date(Date.now() - 3600_000).toISOString();
  const figures = async (child: Child) => (await ok(child.api(`/videos/${video}/analytics/?granularity=minute&from=${from}`), "getVideoAnalytics")).data;
  const first = await waitFor(
    async () => {
      const d = await figures(children[0]!);
      return d?.views === VIEWS ? d : undefined;
    },
    { timeoutMs: 30_000, what: `${VIEWS} views` },
  );
  // Closers keep sweeping: nothing is counted twice afterwards.
  await Bun.sleep(1500);
  const all = await Promise.all(children.map(figures));
  for (const d of all) {
    expect(d).toEqual(all[0]!);
    expect(d.views).toBe(VIEWS);
    expect(d.unique_viewers).toBe(10);
    expect(d.watch_time_seconds).toBeCloseTo(VIEWS * 9.5, 5);
    expect(d.rebuffer_ratio).toBeCloseTo(2 / 11.5, 5);
    expect(d.startup_time_ms).toEqual({ p50: 500, p95: 500 });
  }
  expect(all[0]).toEqual(first);
  const client = createClient({ url: cluster.sqld.url });
  try {
    const closed = await client.execute("SELECT count(*) AS n, sum(watch_ms) AS w FROM analytics_views WHERE closed_at IS NOT NULL");
    expect(Number(closed.rows[0]!.n)).toBe(VIEWS);
    expect(Number(closed.rows[0]!.w)).toBe(VIEWS * 9500);
    const events = await client.execute("SELECT sum(json_array_length(events)) AS n FROM analytics_event_batches");
    expect(Number(events.rows[0]!.n)).toBe(VIEWS * 7);
    const days = await client.execute("SELECT sum(views) AS n FROM analytics_rollups WHERE granularity = 'day'");
    expect(Number(days.rows[0]!.n)).toBe(VIEWS);
  } finally {
    client.close();
  }
});
