import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "@libsql/client";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase } from "../src/db/create-database.ts";
import { createOrgStore } from "../src/orgs/org-store.ts";
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
/** While set, the proxy holds every request that reads API keys until it resolves. */
let keyGate: Promise<void> | null = null;
let heldKeyReads = 0;

beforeAll(async () => {
  sqld = await startSqld();
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.text();
      if (body?.includes("FROM actors")) seen.actorReads++;
      const keyReads = body?.split(/JOIN api_keys|FROM api_keys/).length ?? 1;
      seen.keyReads += keyReads - 1;
      if (keyReads > 1 && keyGate) {
        heldKeyReads++;
        await keyGate;
      }
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

test("24 concurrent requests with two organizations' keys on B: at most 3 key-lookup statements, each request its own organization's answer", async () => {
  const database = await createDatabase({ url: sqld.url });
  try {
    const other = await createOrgStore(database).createOrg("Other organization");
    const mine = await a.api("/livestreams/", { method: "POST", json: { title: "Only A's" } });
    expect(mine.status).toBe(201);
    const theirs = await fetch(`${a.base}/api/public/v1/livestreams/`, {
      method: "POST",
      headers: { authorization: `Bearer ${other.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ title: "Only B's" }),
    });
    expect(theirs.status).toBe(201);
    const theirId = ((await theirs.json()) as { data: { stream: { id: string } } }).data.stream.id;
    const wrongSecret = `${other.apiKey.slice(0, -4)}${other.apiKey.endsWith("aaaa") ? "bbbb" : "aaaa"}`;
    const keys = [a.apiKey, other.apiKey, wrongSecret];

    // Held at the proxy: the requests that arrive meanwhile wait for one statement after it.
    let release = () => {};
    keyGate = new Promise((r) => {
      release = r;
    });
    heldKeyReads = 0;
    const before = seen.keyReads;
    const answers = Array.from({ length: 24 }, (_, i) => fetch(`${b.base}/api/public/v1/livestreams/?limit=100`, { headers: { authorization: `Bearer ${keys[i % 3]}` } }));
    const theirsByMine = fetch(`${b.base}/api/public/v1/livestreams/${theirId}/`, { headers: { authorization: `Bearer ${a.apiKey}` } });
    while (heldKeyReads === 0) await Bun.sleep(10);
    await Bun.sleep(500);
    keyGate = null;
    release();
    const responses = await Promise.all(answers);
    expect((await theirsByMine).status).toBe(404);
    expect(seen.keyReads - before).toBeLessThanOrEqual(3);
    for (const [i, res] of responses.entries()) {
      if (i % 3 === 2) {
        expect(res.status).toBe(401);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe("INVALID_API_KEY");
        continue;
      }
      expect(res.status).toBe(200);
      const titles = ((await res.json()) as { data: { items: Array<{ title: string }> } }).data.items.map((s) => s.title);
      expect(titles).toContain(i % 3 === 0 ? "Only A's" : "Only B's");
      expect(titles).not.toContain(i % 3 === 0 ? "Only B's" : "Only A's");
    }
  } finally {
    keyGate = null;
    database.close();
  }
});

test("a settings change made elsewhere is B's very next answer", async () => {
  const database = await createDatabase({ url: sqld.url });
  try {
    expect((await b.api("/organization/")).status).toBe(200);
    await createOrgStore(database).updateSettings(a.orgId, (s) => ({ ...s, limits: { ...s.limits, uploadUrlPerMinute: 61 } }));
    const res = await b.api("/organization/");
    expect(((await res.json()) as { data: { organization: { limits: { upload_url_per_minute: number } } } }).data.organization.limits.upload_url_per_minute).toBe(61);
  } finally {
    database.close();
  }
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
