import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Cluster, startCluster } from "./support/cluster.ts";
import { startFileServer } from "./support/file-server.ts";
import type { Child } from "./support/service-process.ts";

/**
 * Issue 24 item 2 on the real engines: two processes on one sqld and one
 * s3rver bucket; the bucket goes away for ~10 s while videos are in the
 * pipeline (fetched sources being stored, transcodes downloading and
 * uploading). Before, each in-flight video spent its three attempts in
 * 6-9 s and ended ERROR TRANSCODE_FAILED although its source was safe; now
 * our own outage is retried without spending attempts, and every video
 * completes once the bucket is back. A source that really is missing still
 * fails at once.
 */

const origin = startFileServer();
let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster({ name: "infra-outage", env: { TRANSCODE_WORKERS: "1", JOB_LEASE_MS: "5000" } });
  await cluster.spawn();
  await cluster.spawn();
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  origin.stop();
}, 60_000);

async function register(c: Child, url: string): Promise<string> {
  const res = await c.api("/videos/", { method: "POST", json: { source_url: url } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { data: { asset: { public_id: string } } }).data.asset.public_id;
}

async function statusOf(c: Child, id: string): Promise<{ status: string; code: string | null }> {
  const body = (await (await c.api(`/videos/${id}/`)).json()) as { data: { video: { status: string }; error: { code: string } | null } };
  return { status: body.data.video.status, code: body.data.error?.code ?? null };
}

test("a 10 s outage of the bucket mid-pipeline: every video completes after it returns; a missing source still fails", async () => {
  const [a, b] = cluster.children as [Child, Child];
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push(await register(i % 2 ? b : a, `${origin.url("av-odd-322x242-2s.mp4")}?before=${i}`));
  // Mid-pipeline: the first source fetched and stored, the others on their way.
  const deadline = Date.now() + 60_000;
  while (origin.hits("av-odd-322x242-2s.mp4") < 1 && Date.now() < deadline) await Bun.sleep(50);
  await cluster.s3.pause();
  const outageStart = Date.now();
  // Registered during the outage: fetched, then stored into a bucket that is not there.
  for (let i = 0; i < 2; i++) ids.push(await register(i % 2 ? a : b, `${origin.url("av-odd-322x242-2s.mp4")}?during=${i}`));
  const missing = await register(a, origin.url("never-there.mp4"));
  await Bun.sleep(Math.max(0, 10_000 - (Date.now() - outageStart)));
  // While it lasts nothing is given up on.
  for (const id of ids) expect((await statusOf(a, id)).status).not.toBe("ERROR");
  await cluster.s3.resume();

  const settled = async () => Promise.all(ids.map((id) => statusOf(b, id)));
  let last = await settled();
  const end = Date.now() + 180_000;
  while (last.some((v) => v.status === "TRANSCODING") && Date.now() < end) {
    await Bun.sleep(500);
    last = await settled();
  }
  expect(last).toEqual(ids.map(() => ({ status: "COMPLETED", code: null })));
  // The media's own failures are not retried as ours: a 404 source is ERROR with its cause.
  expect(await statusOf(a, missing)).toEqual({ status: "ERROR", code: "SOURCE_NOT_FOUND" });
}, 300_000);
