import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import Database from "libsql";
import { join } from "node:path";
import { videoInput } from "../machines/test-contexts.ts";
import { newId } from "../src/ids.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

// The hot read path keeps answers while the database is unchanged (src/db/read-cache.ts), actor
// records per row version, and list items serialized per record (src/http/view-cache.ts). What a
// user checks: every change is seen by the very next request, one organization never sees
// another's, and list items are exactly the single GET's resource.

let t: TestService;
let other: { orgId: string; key: string };

const get = async (path: string, key = t.apiKey) => {
  const res = await t.api(path, { key });
  // Untyped on purpose: this helper reads every route the test calls (success or error) and the test walks the answer by key; the typed readers are test/support/api.ts.
  return { status: res.status, body: (await res.json()) as any };
};

beforeAll(async () => {
  t = await startTestService({ env: { LIVE_SLOTS: "100", LIVE_SLOTS_PER_ORG: "100" } });
  const b = await t.service.orgs.createOrg("other");
  other = { orgId: b.org.id, key: b.apiKey };
});
afterAll(() => t.stop({ cleanup: true }));

async function createVideo(orgId = t.orgId) {
  const id = newId("vid");
  await t.service.runtime.create("video", videoInput({ id, orgId, title: `Clip ${id}`, sourceUrl: `https://example.com/${id}.mp4`, createdAt: new Date().toISOString() }));
  return id;
}

test("a transition is seen by the next GET and the next list, whichever was cached", async () => {
  const id = await createVideo();
  // Cache both answers (twice: the second is served from the caches).
  for (let i = 0; i < 2; i++) {
    expect((await get(`/videos/${id}/`)).body.data.video.progress).toBe(0);
    expect((await get("/videos/?limit=100")).body.data.items.find((v: any) => v.video.id === id).video.progress).toBe(0);
  }
  expect((await t.service.runtime.send("video", id, { type: "TRANSCODING_STARTED", transcoderId: "t1" }))?.changed).toBe(true);
  expect((await t.service.runtime.send("video", id, { type: "PROGRESS", percent: 42 }))?.changed).toBe(true);
  expect((await get(`/videos/${id}/`)).body.data.video.progress).toBe(42);
  expect((await get("/videos/?limit=100")).body.data.items.find((v: any) => v.video.id === id).video.progress).toBe(42);
  await t.service.runtime.send("video", id, { type: "TRANSCODING_FAILED", error: { code: "X", message: "boom" } });
  expect((await get(`/videos/${id}/`)).body.data.video.status).toBe("ERROR");
  expect((await get("/videos/?limit=100")).body.data.items.find((v: any) => v.video.id === id).video.status).toBe("ERROR");
});

test("list items are byte for byte the single GET's resource, and the envelope is the usual one", async () => {
  const first = await createVideo();
  await Bun.sleep(3); // newest first by created_at (ms), then id: two in one millisecond would order by their random ids
  const ids = [first, await createVideo()];
  const res = await t.api("/videos/?limit=100");
  expect(res.headers.get("content-type")).toBe("application/json;charset=utf-8");
  const list = await ok(res, "listVideos");
  expect(Object.keys(list)).toEqual(["success", "message", "data", "meta"]);
  expect(list.success).toBe(true);
  expect(list.message).toBe("OK");
  expect(Number.isNaN(Date.parse(list.meta.timestamp))).toBe(false);
  for (const id of ids) {
    const one = await get(`/videos/${id}/`);
    expect(JSON.stringify(list.data.items.find((v: any) => v.video.id === id))).toBe(JSON.stringify(one.body.data));
  }
  // Pages still chain: two pages of one item each give the two newest.
  const p1 = await get("/videos/?limit=1");
  const p2 = await get(`/videos/?limit=1&cursor=${p1.body.data.next_cursor}`);
  expect([p1.body.data.items[0].video.id, p2.body.data.items[0].video.id]).toEqual([ids[1], ids[0]]);
});

test("another organization's ids stay 404 and its lists stay its own, after the owner's answers were cached", async () => {
  const id = await createVideo();
  const stream = await ok(t.api("/livestreams/", { method: "POST", json: { title: "Mine" } }), "createLivestream");
  const streamId = stream.data.stream.id;
  const hook = await ok(t.api("/webhooks/", { method: "POST", json: { url: "https://example.com/hook", events: ["VIDEO_TRANSCODING_COMPLETED"] } }), "createWebhook");
  for (let i = 0; i < 2; i++) {
    expect((await get(`/videos/${id}/`)).status).toBe(200);
    expect((await get(`/livestreams/${streamId}/`)).status).toBe(200);
    expect((await get(`/webhooks/${hook.data.endpoint.id}/`)).status).toBe(200);
    expect((await get("/webhooks/")).body.data.items.length).toBeGreaterThan(0);
  }
  for (let i = 0; i < 2; i++) {
    expect((await get(`/videos/${id}/`, other.key)).status).toBe(404);
    expect((await get(`/livestreams/${streamId}/`, other.key)).status).toBe(404);
    expect((await get(`/webhooks/${hook.data.endpoint.id}/`, other.key)).status).toBe(404);
    expect((await get("/videos/?limit=100", other.key)).body.data.items).toEqual([]);
    expect((await get("/livestreams/?limit=100", other.key)).body.data.items).toEqual([]);
    expect((await get("/webhooks/", other.key)).body.data.items).toEqual([]);
  }
});

test("a deletion is seen at once: a deleted video 404s and leaves the list, a deleted endpoint leaves the list", async () => {
  const id = await createVideo();
  expect((await get(`/videos/${id}/`)).status).toBe(200);
  expect((await t.api(`/videos/${id}/`, { method: "DELETE" })).status).toBe(200);
  expect((await get(`/videos/${id}/`)).status).toBe(404);
  expect((await get("/videos/?limit=100")).body.data.items.some((v: any) => v.video.id === id)).toBe(false);

  const hook = await ok(t.api("/webhooks/", { method: "POST", json: { url: "https://example.com/gone", events: ["VIDEO_TRANSCODING_COMPLETED"] } }), "createWebhook");
  expect((await get("/webhooks/")).body.data.items.some((e: any) => e.id === hook.data.endpoint.id)).toBe(true);
  expect((await t.api(`/webhooks/${hook.data.endpoint.id}/`, { method: "DELETE" })).status).toBe(200);
  expect((await get("/webhooks/")).body.data.items.some((e: any) => e.id === hook.data.endpoint.id)).toBe(false);
  expect((await get(`/webhooks/${hook.data.endpoint.id}/`)).status).toBe(404);
});

test("a revoked key is 401 on the very next request; a settings change counts at once", async () => {
  const c = await t.service.orgs.createOrg("revoked");
  for (let i = 0; i < 3; i++) expect((await get("/organization/", c.apiKey)).status).toBe(200);
  await t.service.orgs.updateSettings(c.org.id, (s) => ({ ...s, permissions: s.permissions.filter((p) => p !== "videos.read") }));
  expect((await get("/videos/", c.apiKey)).status).toBe(403);
  await t.service.orgs.revokeKey(c.org.id);
  expect((await get("/organization/", c.apiKey)).status).toBe(401);
});

test("a commit by another connection (another process's writer) is seen by the next request", async () => {
  const id = await createVideo();
  for (let i = 0; i < 2; i++) expect((await get(`/videos/${id}/`)).body.data.video.title).toBe(`Clip ${id}`);
  const path = t.service.database.url.replace(/^file:/, "");
  if (!t.service.database.url.startsWith("file:")) return; // on sqld nothing is cached
  const conn = new Database(path);
  try {
    const row = conn.prepare("SELECT state, version FROM actors WHERE id = ?").get(id) as { state: string; version: number };
    const state = JSON.parse(row.state);
    state.context.title = "Renamed elsewhere";
    conn.prepare("UPDATE actors SET state = ?, version = ?, updated_at = ? WHERE id = ?").run(JSON.stringify(state), row.version + 1, Date.now(), id);
  } finally {
    conn.close();
  }
  expect((await get(`/videos/${id}/`)).body.data.video.title).toBe("Renamed elsewhere");
  expect((await get("/videos/?limit=100")).body.data.items.find((v: any) => v.video.id === id).video.title).toBe("Renamed elsewhere");
});

test("every read on the hot path is served by an index (EXPLAIN QUERY PLAN)", () => {
  if (!t.service.database.url.startsWith("file:")) return;
  const conn = new Database(t.service.database.url.replace(/^file:/, ""), { readonly: true });
  const plan = (sql: string, args: unknown[]) => (conn.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(" | ");
  try {
    const reads: Array<[string, unknown[], RegExp]> = [
      [
        "SELECT k.id FROM api_keys k JOIN organizations o ON o.id = k.org_id WHERE k.prefix = ? LIMIT 1",
        ["x"],
        /SEARCH k USING INDEX .*\(prefix=\?\).*SEARCH o USING (COVERING )?INDEX sqlite_autoindex_organizations_1 \(id=\?\)/,
      ],
      ["SELECT id FROM actors WHERE id = ? AND kind = ? AND deleted_at IS NULL LIMIT 1", ["x", "video"], /SEARCH actors USING (COVERING )?INDEX sqlite_autoindex_actors_1 \(id=\?\)/],
      ["SELECT id FROM actors WHERE id IN (?, ?, ?)", ["x", "y", "z"], /SEARCH actors USING (COVERING )?INDEX sqlite_autoindex_actors_1 \(id=\?\)/],
      [
        "SELECT id FROM actors WHERE org_id = ? AND kind = ? AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ?",
        ["o", "video", 10],
        /SEARCH actors USING INDEX actors_org_kind_created \(org_id=\? AND kind=\?\)$/,
      ],
      [
        "SELECT id FROM actors WHERE org_id = ? AND kind = ? AND deleted_at IS NULL AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?",
        ["o", "video", 1, 1, "x", 10],
        /SEARCH actors USING INDEX actors_org_kind_created \(org_id=\? AND kind=\? AND created_at<\?\)|SEARCH actors USING INDEX actors_org_kind_created \(org_id=\? AND kind=\?\)$/,
      ],
      [
        "SELECT id FROM webhook_endpoints WHERE id = ? AND org_id = ? AND deleted_at IS NULL LIMIT 1",
        ["x", "o"],
        /SEARCH webhook_endpoints USING (COVERING )?INDEX sqlite_autoindex_webhook_endpoints_1 \(id=\?\)/,
      ],
      [
        "SELECT id FROM webhook_endpoints WHERE org_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ?",
        ["o", 10],
        /SEARCH webhook_endpoints USING INDEX webhook_endpoints_org \(org_id=\?\)$/,
      ],
    ];
    for (const [sql, args, expected] of reads) {
      const p = plan(sql, args);
      expect(p).toMatch(expected);
      expect(p).not.toMatch(/SCAN|TEMP B-TREE/);
    }
  } finally {
    conn.close();
  }
});

test("the stored JSON of a stream list follows its viewer count and its transitions", async () => {
  const created = await ok(t.api("/livestreams/", { method: "POST", json: { title: "Watch me" } }), "createLivestream");
  const id = created.data.stream.id;
  const item = async () => (await get("/livestreams/?limit=100")).body.data.items.find((s: any) => s.id === id);
  const first = await item();
  expect(first.status).toBe("READY_TO_STREAM");
  expect(JSON.stringify(first)).toBe(JSON.stringify((await get(`/livestreams/${id}/`)).body.data.stream));
  expect((await t.api(`/livestreams/${id}/end/`, { method: "POST" })).status).toBe(200);
  expect((await item()).status).toBe("ENDED");
});
