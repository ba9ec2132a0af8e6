import { newId } from "../src/ids.ts";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { count, eq } from "drizzle-orm";
import { actors, uploads } from "../src/db/schema/index.ts";
import { waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed } from "./support/api.ts";

setDefaultTimeout(120_000);

// Strict input at the HTTP edge: unknown fields, nulls, tags, nesting depth,
// scheduled_at, the upload-url body, percent-encoding and list filters.

const files = startFileServer({ stallPaths: ["/stall.mp4"] });
let t: TestService;

beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => {
  await t.stop();
  files.stop();
});

async function call(path: string, init: { method?: string; json?: unknown; raw?: string; key?: string | null } = {}) {
  const res = await t.api(path, {
    method: init.method ?? (init.json !== undefined || init.raw !== undefined ? "POST" : "GET"),
    json: init.json,
    body: init.raw,
    headers: init.raw !== undefined ? { "content-type": "application/json" } : undefined,
    key: init.key,
  });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers };
}

const rows = async (kind: string) => Number((await t.service.database.db.select({ n: count() }).from(actors).where(eq(actors.kind, kind)))[0]!.n);
const uploadSlots = async () => Number((await t.service.database.db.select({ n: count() }).from(uploads))[0]!.n);

function expect422(r: { status: number; body: any }, fields: string[]) {
  expect(r.status).toBe(422);
  expect(r.body).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR" }, meta: { timestamp: expect.any(String) } });
  for (const f of fields) expect(r.body.error.details).toHaveProperty([f]);
}

describe("unknown fields, every failing field at once, nulls", () => {
  test("every POST route names each unknown field, together with the other failing fields, and creates nothing", async () => {
    const endpoint = await call("/webhooks/", { json: { url: "https://hooks.example.com/x", events: ["VIDEO_UPLOADED"] } });
    expect(endpoint.status).toBe(201);
    const whk = endpoint.body.data.endpoint.id;
    const before = { videos: await rows("video"), streams: await rows("livestream"), slots: await uploadSlots() };
    const cases: Array<[string, unknown, string[]]> = [
      ["/videos/", { source_url: "ftp://x", title: 5, bogus: 1, also_bogus: null }, ["bogus", "also_bogus", "source_url", "title"]],
      ["/videos/upload-url/", { filename: 7, size_bytes: -1, bogus: true }, ["bogus", "filename", "size_bytes"]],
      ["/livestreams/", { title: "", latency: "ULTRA", drm_enabled: "yes", tags: [], bogus: {} }, ["bogus", "title", "latency", "drm_enabled", "tags"]],
      ["/livestreams/schedule/", { title: "x", scheduled_at: "tomorrow", bogus: 1 }, ["bogus", "scheduled_at"]],
      ["/webhooks/", { url: "http://plain.example.com", events: ["NOPE"], description: 5, bogus: 1 }, ["bogus", "url", "events", "description"]],
      [`/webhooks/${whk}/test/`, { event: "NOPE", bogus: 1 }, ["bogus", "event"]],
      [`/webhooks/${whk}/deliveries/dlv_missing/retry/`, { bogus: 1, other: 2 }, ["bogus", "other"]],
    ];
    for (const [path, json, fields] of cases) {
      const r = await call(path, { json });
      expect422(r, fields);
      expect(Object.keys(r.body.error.details).sort()).toEqual([...fields].sort());
      for (const f of fields.filter((f) => f.includes("bogus") || f === "other")) expect(r.body.error.details[f]).toBe("is not a known field");
    }
    expect({ videos: await rows("video"), streams: await rows("livestream"), slots: await uploadSlots() }).toEqual(before);
  });

  test("a missing required field is named with the others", async () => {
    const r = await call("/livestreams/schedule/", { json: { tags: { a: 1 } } });
    expect422(r, ["title", "scheduled_at"]);
  });

  test("null on optional fields is accepted and reads back as null (or the field's default)", async () => {
    const video = await call("/videos/", { json: { source_url: files.url("missing-for-nulls.mp4"), title: null, drm_enabled: null, subtitles: null, tags: null } });
    expect(video.status).toBe(201);
    const v = (await call(`/videos/${video.body.data.asset.public_id}/`)).body.data.video;
    expect(v.tags).toBeNull();
    expect(v.title).toBe("missing-for-nulls.mp4");

    const stream = await call("/livestreams/", { json: { title: "nulls", latency: null, drm_enabled: null, tags: null } });
    expect(stream.status).toBe(201);
    const s = (await call(`/livestreams/${stream.body.data.stream.id}/`)).body.data.stream;
    expect(s.tags).toBeNull();
    expect(s.latency).toBe("NORMAL");

    const at = new Date(Date.now() + 3_600_000).toISOString();
    const booked = await call("/livestreams/schedule/", { json: { title: "nulls", scheduled_at: at, tags: null, latency: null } });
    expect(booked.status).toBe(201);
    expect(booked.body.data.stream.tags).toBeNull();

    const hook = await call("/webhooks/", { json: { url: "https://hooks.example.com/nulls", events: ["VIDEO_UPLOADED"], fields: null, description: null } });
    expect(hook.status).toBe(201);
    expect(hook.body.data.endpoint.description).toBeNull();

    const slot = await call("/videos/upload-url/", { json: { filename: null, size_bytes: null } });
    expect(slot.status).toBe(201);
  });
});

describe("tags", () => {
  test('a string is refused (it used to be stored as {"0":"s",...}), on videos and on streams, and nothing is created', async () => {
    const before = { videos: await rows("video"), streams: await rows("livestream") };
    expect422(await call("/videos/", { json: { source_url: files.url("tags-str.mp4"), tags: "str" } }), ["tags"]);
    expect422(await call("/livestreams/", { json: { title: "x", tags: "str" } }), ["tags"]);
    expect({ videos: await rows("video"), streams: await rows("livestream") }).toEqual(before);
  });

  test("the one rule: flat object, at most 50 keys of 1-64 characters, scalar values, strings at most 256", async () => {
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    const refused: unknown[] = [[1, 2], 5, true, { ...fifty, one_more: 1 }, { ["k".repeat(65)]: 1 }, { "": 1 }, { a: "v".repeat(257) }, { a: { nested: 1 } }, { a: [1] }];
    for (const tags of refused) {
      expect422(await call("/videos/", { json: { source_url: files.url("tags-bad.mp4"), tags } }), ["tags"]);
      expect422(await call("/livestreams/", { json: { title: "x", tags } }), ["tags"]);
      expect(Object.keys((await call("/livestreams/", { json: { title: "x", tags } })).body.error.details)).toEqual(["tags"]);
    }
    // At the limits, and every scalar kind, read back exactly as given (multi-byte characters count once).
    const edge = { ...Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`k${i}`, i])), ["é".repeat(64)]: "😀".repeat(256), b: true, n: null, f: 1.5, constructor: "builders" };
    const v = await call("/videos/", { json: { source_url: files.url("tags-edge.mp4"), tags: edge } });
    expect(v.status).toBe(201);
    expect((await call(`/videos/${v.body.data.asset.public_id}/`)).body.data.video.tags).toEqual(edge);
    const s = await call("/livestreams/", { json: { title: "edge", tags: edge } });
    expect(s.status).toBe(201);
    expect((await call(`/livestreams/${s.body.data.stream.id}/`)).body.data.stream.tags).toEqual(edge);
  });

  test("a __proto__ key is refused and pollutes nothing", async () => {
    const raw = '{"title":"proto","tags":{"__proto__":{"polluted":"yes"},"a":1}}';
    expect422(await call("/livestreams/", { raw }), ["tags"]);
    expect422(await call("/videos/", { raw: `{"source_url":"${files.url("proto.mp4")}","tags":{"__proto__":{"polluted":"yes"}}}` }), ["tags"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const list = await call("/livestreams/");
    expect(list.status).toBe(200);
  });
});

describe("nesting depth", () => {
  const deep = (n: number) => "[".repeat(n) + "]".repeat(n);

  test("60,000 levels are refused with 422 before parsing, and the service keeps answering", async () => {
    const answers = await Promise.all([
      call("/videos/", { raw: deep(60_000) }),
      call("/livestreams/", { raw: `{"title":"x","tags":{"a":${deep(60_000)}}}` }),
      call("/webhooks/", { raw: "{".repeat(40_000) }),
      call("/organization/"),
    ]);
    for (const r of answers.slice(0, 3)) {
      expect422(r, ["body"]);
      expect(r.body.error.details.body).toContain("32");
    }
    expect(answers[3]!.status).toBe(200);
    expect((await call("/organization/")).status).toBe(200);
  });

  test("the limit is 32 levels outside strings; brackets inside strings do not count", async () => {
    const nested = (n: number) => `{"title":"x","tags":${"[".repeat(n - 1)}${"]".repeat(n - 1)}}`;
    // 32 levels: parsed, then refused by the tags rule (details.tags, not details.body).
    expect422(await call("/livestreams/", { raw: nested(32) }), ["tags"]);
    expect422(await call("/livestreams/", { raw: nested(33) }), ["body"]);
    const inString = await call("/livestreams/", { json: { title: "[".repeat(5000) + "{".repeat(5000) + '\\"[' } });
    expect(inString.status).toBe(422);
    expect(inString.body.error.details).toEqual({ title: expect.any(String) });
    const ok = await call("/livestreams/", { json: { title: "[[[{{{ not nesting" } });
    expect(ok.status).toBe(201);
  });
});

describe("scheduled_at", () => {
  test("strict ISO 8601 with an offset, a real calendar date, in the future and within a year; else 422 and nothing booked", async () => {
    const before = await rows("livestream");
    const inAYear = new Date();
    inAYear.setUTCFullYear(inAYear.getUTCFullYear() + 1);
    const refused = [
      "2099-02-30T10:00:00Z", // Date.parse made this March 2
      "2026-13-01T10:00:00Z",
      new Date(Date.now() + 86_400_000).toISOString().replace("Z", ""), // no offset
      new Date(Date.now() + 86_400_000).toISOString().slice(0, 10), // a date alone
      "2020-01-01T00:00:00Z", // past
      new Date(inAYear.getTime() + 86_400_000).toISOString(), // over a year ahead
      "2027-02-29T10:00:00Z", // not a leap year
      "2030-01-01T24:00:00Z",
      "2030-01-01T10:00:00+25:00",
      "next tuesday",
      1893456000000,
    ];
    for (const scheduled_at of refused) {
      const r = await call("/livestreams/schedule/", { json: { title: "x", scheduled_at } });
      expect422(r, ["scheduled_at"]);
      expect(Object.keys(r.body.error.details)).toEqual(["scheduled_at"]);
    }
    expect(await rows("livestream")).toBe(before);

    // An offset is honoured and read back as the same instant in UTC.
    const when = new Date(Date.now() + 2 * 86_400_000);
    when.setUTCMilliseconds(0);
    const local = new Date(when.getTime() + 2 * 3_600_000).toISOString().replace(".000Z", "+02:00");
    const ok = await call("/livestreams/schedule/", { json: { title: "offset", scheduled_at: local } });
    expect(ok.status).toBe(201);
    expect(ok.body.data.stream.scheduled_at).toBe(when.toISOString());
    expect(ok.body.data.stream.status).toBe("SCHEDULED");
  });
});

describe("POST /videos/upload-url/", () => {
  test("a body of `{` is 422 and creates no slot (it used to create one); so are a non-object and unknown fields", async () => {
    const before = await uploadSlots();
    expect422(await call("/videos/upload-url/", { raw: "{" }), ["body"]);
    expect422(await call("/videos/upload-url/", { raw: "[]" }), ["body"]);
    expect422(await call("/videos/upload-url/", { raw: '"x"' }), ["body"]);
    expect422(await call("/videos/upload-url/", { json: { x: 1 } }), ["x"]);
    expect(await uploadSlots()).toBe(before);
    // No body and {} still presign.
    expect((await call("/videos/upload-url/", { method: "POST" })).status).toBe(201);
    expect((await call("/videos/upload-url/", { json: {} })).status).toBe(201);
    expect(await uploadSlots()).toBe(before + 2);
  });
});

describe("malformed percent-encoding", () => {
  test("in any path: 4xx in the envelope, never 500", async () => {
    const bad = "%E0%A4%A";
    const api: Array<[string, string]> = [
      ["GET", `/videos/${bad}/`],
      ["DELETE", `/videos/${bad}/`],
      ["GET", `/livestreams/${bad}/`],
      ["DELETE", `/livestreams/${bad}/`],
      ["POST", `/livestreams/${bad}/end/`],
      ["GET", `/webhooks/${bad}/`],
      ["GET", `/webhooks/${bad}/deliveries/`],
      ["POST", `/webhooks/${bad}/deliveries/%ZZ/retry/`],
      ["POST", `/webhooks/${bad}/test/`],
      ["GET", `/${bad}`],
      ["GET", `/videos/?cursor=${bad}`],
    ];
    for (const [method, path] of api) {
      const r = await call(path, { method });
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body).toMatchObject({ success: false, error: { code: expect.any(String) }, meta: { timestamp: expect.any(String) } });
      // Without a key it is still the 401, never something that reveals more.
      expect((await call(path, { method, key: null })).status).toBe(401);
    }
    for (const [method, path] of [
      ["GET", `/media/${bad}/x.m3u8`],
      ["GET", `/live/${bad}/index.m3u8`],
      ["PUT", `/uploads/${bad}`],
      ["GET", `/${bad}`],
      ["GET", `/openapi/${bad}`],
    ] as const) {
      const res = await fetch(`${t.base}${path}`, { method });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect((await failed(res)).success).toBe(false);
    }
  });

  test("in source_url: 422 details.source_url, nothing created", async () => {
    const before = await rows("video");
    const r = await call("/videos/", { json: { source_url: "https://example.com/%E0%A4%A.mp4" } });
    expect422(r, ["source_url"]);
    expect(await rows("video")).toBe(before);
  });
});

describe("list filters and query parameters", () => {
  test("GET /videos/?status=&kind= filter (and page within the filter)", async () => {
    const failed = await call("/videos/", { json: { source_url: files.url("no-such-file.mp4") } });
    const running = await call("/videos/", { json: { source_url: files.url("stall.mp4") } });
    expect([failed.status, running.status]).toEqual([201, 201]);
    const failedId = failed.body.data.asset.public_id;
    const runningId = running.body.data.asset.public_id;
    await waitFor(async () => (await call(`/videos/${failedId}/`)).body.data.video.status === "ERROR", { timeoutMs: 30_000, what: "the 404 source to fail" });
    // A live recording enters the library through the same service call the ingest uses.
    const recording = await t.service.database.write((tx) =>
      t.service.videos.videos.registerRecordingIn(tx, {
        id: newId("vid"),
        orgId: t.orgId,
        title: "rec",
        stream: { id: "ls_filter", stream_key: "k".repeat(32) },
        sourcePath: "/nonexistent.flv",
        tags: null,
        dedupeKey: "recording:ls_filter",
      }),
    );

    const ids = async (q: string) => {
      const r = await call(`/videos/${q}`);
      expect(r.status).toBe(200);
      return r.body.data.items.map((i: any) => i.video.id) as string[];
    };
    const errors = await ids("?status=ERROR&limit=100");
    expect(errors).toContain(failedId);
    expect(errors).not.toContain(runningId);
    const transcoding = await ids("?status=TRANSCODING&kind=UPLOAD&limit=100");
    expect(transcoding).toContain(runningId);
    expect(transcoding).not.toContain(failedId);
    expect(await ids("?status=TRANSCODING,ERROR&limit=100")).toEqual(expect.arrayContaining([failedId, runningId]));
    expect(await ids("?kind=LIVESTREAM_RECORDING")).toEqual([recording.id]);
    expect(await ids("?kind=UPLOAD&limit=100")).not.toContain(recording.id);
    for (const item of (await call("/videos/?status=ERROR&limit=100")).body.data.items) expect(item.video.status).toBe("ERROR");
    // Paging stays inside the filter.
    const first = await call("/videos/?kind=UPLOAD&limit=1");
    expect(first.body.data.items).toHaveLength(1);
    const second = await call(`/videos/?kind=UPLOAD&limit=1&cursor=${first.body.data.next_cursor}`);
    expect(second.body.data.items[0].video.kind).toBe("UPLOAD");
    expect(second.body.data.items[0].video.id).not.toBe(first.body.data.items[0].video.id);
  });

  test("GET /livestreams/?status= filters", async () => {
    const ready = (await call("/livestreams/", { json: { title: "ready" } })).body.data.stream.id;
    const booked = (await call("/livestreams/schedule/", { json: { title: "booked", scheduled_at: new Date(Date.now() + 86_400_000).toISOString() } })).body.data.stream.id;
    const list = async (q: string) => (await call(`/livestreams/${q}`)).body.data.items.map((s: any) => s.id) as string[];
    const scheduled = await list("?status=SCHEDULED&limit=100");
    expect(scheduled).toContain(booked);
    expect(scheduled).not.toContain(ready);
    expect(await list("?status=READY_TO_STREAM&limit=100")).not.toContain(booked);
    expect(await list("?status=SCHEDULED,READY_TO_STREAM&limit=100")).toEqual(expect.arrayContaining([ready, booked]));
    expect(await list("?status=ENDED")).not.toContain(ready);
  });

  test("an unknown, repeated or badly valued query parameter on any list is 422 naming it", async () => {
    const hook = (await call("/webhooks/", { json: { url: "https://hooks.example.com/q", events: ["VIDEO_UPLOADED"] } })).body.data.endpoint.id;
    const lists = ["/videos/", "/livestreams/", "/webhooks/", `/webhooks/${hook}/deliveries/`];
    for (const path of lists) {
      expect422(await call(`${path}?bogus=1`), ["bogus"]);
      expect422(await call(`${path}?limit=5&__proto__=x&constructor=y`), ["__proto__", "constructor"]);
      expect422(await call(`${path}?limit=1&limit=2`), ["limit"]);
      expect422(await call(`${path}?limit=0`), ["limit"]);
      expect422(await call(`${path}?limit=abc`), ["limit"]);
      expect((await call(`${path}?limit=5`)).status).toBe(200);
    }
    expect422(await call("/videos/?status=LIVE"), ["status"]);
    expect422(await call("/videos/?status="), ["status"]);
    expect422(await call("/videos/?kind=upload"), ["kind"]);
    expect422(await call("/videos/?status=BOGUS&kind=BOGUS&x=1"), ["status", "kind", "x"]);
    expect422(await call("/livestreams/?status=TRANSCODING"), ["status"]);
    expect422(await call("/livestreams/?kind=UPLOAD"), ["kind"]);
    expect422(await call("/webhooks/?status=ENDED"), ["status"]);
  });
});
