import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Cluster, startCluster } from "./support/cluster.ts";
import { startFileServer } from "./support/file-server.ts";
import type { Child } from "./support/service-process.ts";

/**
 * Honest answers while a dependency is down (issue 24, item 4), on real sqld
 * and s3rver with the service in child processes. A dependency that hangs is
 * made with SIGSTOP (it keeps its sockets and answers nothing, as sqld did
 * when its write lock stalled); SIGCONT brings it back.
 *
 * Every request is answered within its bound, and a dependency that is down
 * gives 503 SERVICE_UNAVAILABLE with Retry-After (header and
 * `error.details.retry_after`), never a hang and never a bare 500; /readyz
 * checks the write path and the bucket.
 */

const BOUNDS = { REQUEST_TIMEOUT_MS: "8000", DATABASE_TIMEOUT_MS: "3000", STORAGE_TIMEOUT_MS: "3000" };
/** Longer than any bound above plus a loaded machine's slack: a request still open then has hung. */
const CLIENT_PATIENCE_MS = 25_000;

let cluster: Cluster;
let http: Child;
let ws: Child;
const origin = startFileServer();

beforeAll(async () => {
  cluster = await startCluster({ name: "outages", env: BOUNDS });
  http = await cluster.spawn();
  // The same database through a WebSocket (no fetch to abort there: the request deadline answers).
  ws = await cluster.spawn({ DATABASE_URL: cluster.sqld.wsUrl });
}, 120_000);

afterAll(async () => {
  for (const pid of [cluster?.sqld.pid, cluster?.s3.pid]) if (pid) process.kill(pid, "SIGCONT");
  await cluster?.stop();
  origin.stop();
}, 60_000);

async function call(child: Child, path: string, init: RequestInit & { json?: unknown } = {}): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const url = path.startsWith("/api/") || path.startsWith("/readyz") || path.startsWith("/media/") ? `${child.base}${path}` : null;
  const res = url
    ? await fetch(url, { ...init, headers: { authorization: `Bearer ${child.apiKey}` }, signal: AbortSignal.timeout(CLIENT_PATIENCE_MS) })
    : await child.api(path, { ...init, signal: AbortSignal.timeout(CLIENT_PATIENCE_MS) });
  const text = await res.text();
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body };
}

function expectUnavailable(r: { status: number; retryAfter: string | null; body: any }) {
  expect(r.status).toBe(503);
  expect(Number(r.retryAfter)).toBeGreaterThan(0);
  expect(r.body.success).toBe(false);
  expect(r.body.error.code).toBe("SERVICE_UNAVAILABLE");
  expect(r.body.error.details.retry_after).toBe(Number(r.retryAfter));
  // Nothing of the failure's internals (hosts, ports, SQL) reaches the client.
  expect(JSON.stringify(r.body)).not.toContain("127.0.0.1");
}

async function until(fn: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn().catch(() => false)) return;
    await Bun.sleep(250);
  }
  throw new Error("condition not reached in time");
}

test("a stalled database: reads, writes and /readyz answer 503 with Retry-After in bounded time, then recover", async () => {
  const created = await call(http, "/videos/", { method: "POST", json: { source_url: origin.url("missing-outage.mp4"), title: "outage" } });
  expect(created.status).toBe(201);
  const id = created.body.data.asset.public_id as string;
  expect((await call(http, `/videos/${id}/`)).status).toBe(200);
  expect((await call(ws, `/videos/${id}/`)).status).toBe(200);
  expect((await call(http, "/readyz")).status).toBe(200);

  process.kill(cluster.sqld.pid, "SIGSTOP");
  try {
    for (const child of [http, ws]) {
      expectUnavailable(await call(child, `/videos/${id}/`));
      expectUnavailable(await call(child, "/videos/", { method: "POST", json: { source_url: origin.url(`missing-during-${child.port}.mp4`), title: "during" } }));
      const ready = await call(child, "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.body.failed).toContain("database");
    }
  } finally {
    process.kill(cluster.sqld.pid, "SIGCONT");
  }
  for (const child of [http, ws]) {
    await until(async () => (await call(child, `/videos/${id}/`)).status === 200, 60_000);
    await until(async () => (await call(child, "/readyz")).status === 200, 60_000);
  }
}, 240_000);

test("a stalled object store: media and /readyz answer 503 with Retry-After in bounded time, then recover", async () => {
  const media = `/media/${"a".repeat(40)}/master.m3u8`;
  expect((await call(http, media)).status).toBe(404);
  process.kill(cluster.s3.pid, "SIGSTOP");
  try {
    expectUnavailable(await call(http, media));
    const ready = await call(http, "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.failed).toContain("storage");
    expect(ready.body.failed).not.toContain("database");
  } finally {
    process.kill(cluster.s3.pid, "SIGCONT");
  }
  await until(async () => (await call(http, media)).status === 404, 60_000);
}, 180_000);
