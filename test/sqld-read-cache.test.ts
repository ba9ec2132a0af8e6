import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "@libsql/client";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Child, spawnService } from "./support/service-process.ts";
import { startSqld, type Sqld } from "./support/sqld.ts";

setDefaultTimeout(120_000);

/**
 * Issue 29, item 2: reads on a libSQL server. Two service processes on one
 * sqld; process B reaches it through a proxy that counts the statements it
 * sends. Repeated GETs of one stream read the actor once (the read cache on a
 * server, src/db/change-feed.ts) and the API key on every call (spec 5.5: no
 * caching, no propagation delay); what process A changed, and a key revoked
 * by anyone, is the answer of B's very next request.
 */

let sqld: Sqld;
let proxy: ReturnType<typeof Bun.serve>;
let a: Child;
let b: Child;
const dirs: string[] = [];
const seen = { actorReads: 0, keyReads: 0 };

beforeAll(async () => {
  sqld = await startSqld();
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.text();
      if (body?.includes("FROM actors")) seen.actorReads++;
      if (body?.includes("JOIN api_keys") || body?.includes("FROM api_keys")) seen.keyReads++;
      const url = new URL(req.url);
      const headers = new Headers(req.headers);
      headers.delete("host");
      const res = await fetch(`${sqld.httpUrl}${url.pathname}${url.search}`, { method: req.method, headers, body });
      const out = new Headers(res.headers);
      out.delete("content-encoding");
      out.delete("content-length");
      return new Response(await res.arrayBuffer(), { status: res.status, headers: out });
    },
  });
  const common = { PORT: "0", RTMP_PORT: "0", SECRET_KEY: "ab".repeat(32), MEDIA_BACKEND: "native", RATE_LIMIT_STORE: "memory", LOG_LEVEL: "warn" };
  const dirA = mkdtempSync(join(tmpdir(), "read-cache-a-"));
  const dirB = mkdtempSync(join(tmpdir(), "read-cache-b-"));
  dirs.push(dirA, dirB);
  a = await spawnService({ ...common, DATA_DIR: dirA, DATABASE_URL: sqld.url });
  b = await spawnService({ ...common, DATA_DIR: dirB, DATABASE_URL: `http://127.0.0.1:${proxy.port}` }, { orgId: a.orgId, apiKey: a.apiKey });
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  proxy?.stop(true);
  await sqld?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function streamOn(child: Child, id: string): Promise<{ status: string; title: string }> {
  const res = await child.api(`/livestreams/${id}/`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { stream: { status: string; title: string } } }).data.stream;
}

test("30 GETs of one stream on process B: the key is read 30 times, the stream once", async () => {
  const created = await a.api("/livestreams/", { method: "POST", json: { title: "Cached" } });
  expect(created.status).toBe(201);
  const { id } = ((await created.json()) as { data: { stream: { id: string } } }).data.stream;
  await streamOn(b, id);
  const before = { ...seen };
  for (let i = 0; i < 30; i++) expect((await streamOn(b, id)).title).toBe("Cached");
  expect(seen.keyReads - before.keyReads).toBe(30);
  // Other work of the process (its work runner, its lease) may read an actor now and then; the GETs read none.
  expect(seen.actorReads - before.actorReads).toBeLessThanOrEqual(2);
});

test("a change made on process A is B's very next answer, though B had the stream cached", async () => {
  const created = await a.api("/livestreams/", { method: "POST", json: { title: "Before" } });
  const { id } = ((await created.json()) as { data: { stream: { id: string } } }).data.stream;
  expect((await streamOn(b, id)).status).toBe("READY_TO_STREAM");
  expect((await streamOn(b, id)).status).toBe("READY_TO_STREAM");
  expect((await a.api(`/livestreams/${id}/end/`, { method: "POST" })).status).toBe(200);
  expect((await streamOn(b, id)).status).toBe("ENDED");
});

test("a key revoked outside both processes is refused by B's next request (401 INVALID_API_KEY)", async () => {
  expect((await b.api("/livestreams/")).status).toBe(200);
  const db = createClient({ url: sqld.url });
  try {
    await db.execute({ sql: "UPDATE api_keys SET revoked_at = ? WHERE org_id = ?", args: [Date.now(), a.orgId] });
  } finally {
    db.close();
  }
  const res = await b.api("/livestreams/");
  expect(res.status).toBe(401);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe("INVALID_API_KEY");
});
