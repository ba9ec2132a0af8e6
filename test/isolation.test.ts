import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import fc from "fast-check";
import { waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { bodyFor, queryString } from "./support/fuzz-arbitraries.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

// Isolation as a property: whatever organization A sends (hostile tags,
// webhook fields such as `constructor.prototype.cursor`, test events that run
// the fields filter, hostile queries, B's ids), B's answers to its own reads
// stay exactly what they were.

const RUNS = Number(process.env.ISOLATION_RUNS ?? 100);
let t: TestService;
const files = startFileServer();
const A = { key: "", endpoints: [] as string[], videos: [] as string[], streams: [] as string[] };
const B = { key: "", video: "", stream: "", booked: "", endpoint: "", delivery: "" };
let requests = 0;

async function call(key: string, method: string, path: string, opts: { body?: string; query?: string } = {}) {
  requests++;
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${t.base}/api/public/v1${path}${opts.query ? `?${opts.query}` : ""}`, { method, headers, body: opts.body });
  const text = await res.text();
  expect(res.status).toBeLessThan(500);
  // Untyped on purpose: this helper reads every route the test calls (success or error) and the test walks the answer by key; the typed readers are test/support/api.ts.
  return { status: res.status, body: JSON.parse(text) as any };
}

const bReads = () => [
  "/organization/",
  "/videos/",
  `/videos/${B.video}/`,
  "/livestreams/",
  `/livestreams/${B.stream}/`,
  `/livestreams/${B.booked}/`,
  "/livestreams/?status=SCHEDULED",
  "/webhooks/",
  `/webhooks/${B.endpoint}/`,
  `/webhooks/${B.endpoint}/deliveries/`,
  "/videos/?limit=1",
];

/** B's answers, without the per-response timestamp. */
async function snapshotB() {
  const out: Record<string, unknown> = {};
  for (const path of bReads()) {
    const [p, q] = path.split("?");
    const r = await call(B.key, "GET", p!, { query: q });
    const { meta, ...rest } = r.body;
    expect(typeof meta?.timestamp).toBe("string");
    out[path] = { status: r.status, ...rest };
  }
  return out;
}

beforeAll(async () => {
  t = await startTestService({ env: { WEBHOOK_TIMEOUT_MS: "500", WEBHOOK_RETRY_SCHEDULE: "3600", SOURCE_TIMEOUT_MS: "2000" } });
  const lift = (orgId: string) =>
    t.service.orgs.updateSettings(orgId, (s) => ({
      ...s,
      limits: { requestsPerMinute: 1_000_000, livestreamsCreatePerMinute: 1_000_000, videosCreatePerMinute: 1_000_000, uploadUrlPerMinute: 1_000_000 },
    }));
  A.key = t.apiKey;
  await lift(t.orgId);
  const b = await t.service.orgs.createOrg("org-b");
  B.key = b.apiKey;
  await lift(b.org.id);

  const post = async (path: string, json: unknown) => {
    const r = await call(B.key, "POST", path, { body: JSON.stringify(json) });
    expect(r.status).toBe(201);
    return r.body.data;
  };
  // A 404 source: a permanent failure, so B's video settles in ERROR quickly.
  B.video = (await post("/videos/", { source_url: files.url("no-such-file-b.mp4"), tags: { owner: "b" } })).asset.public_id;
  B.stream = (await post("/livestreams/", { title: "B live", tags: { owner: "b" } })).stream.id;
  B.booked = (await post("/livestreams/schedule/", { title: "B later", scheduled_at: new Date(Date.now() + 30 * 86_400_000).toISOString() })).stream.id;
  // Subscribed to an event nothing in this test fires, so B's deliveries stay as they are.
  B.endpoint = (await post("/webhooks/", { url: "https://127.0.0.1:9/b", events: ["LIVESTREAM_RECORDING_READY"], fields: ["stream.id"] })).endpoint.id;
  B.delivery = (await post(`/webhooks/${B.endpoint}/test/`, { event: "LIVESTREAM_RECORDING_READY" })).delivery.id;
  // Let B's own background work settle (the unreachable source fails) before the snapshot.
  await waitFor(async () => (await call(B.key, "GET", `/videos/${B.video}/`)).body.data.video.status === "ERROR", { timeoutMs: 30_000, what: "B's video to fail" });
}, 60_000);

afterAll(async () => {
  console.log(`isolation: ${RUNS} sequences, ${requests} requests`);
  await t.stop();
  files.stop();
});

type Action =
  | { kind: "post"; path: string; body: string | undefined }
  | { kind: "webhook"; fields: string[]; events: string[] }
  | { kind: "test"; event: string }
  | { kind: "list"; path: string; query: string }
  | { kind: "probeB"; method: string; path: (b: typeof B) => string; body?: string }
  | { kind: "deleteOwn"; what: "videos" | "livestreams" | "webhooks" };

const HOSTILE_FIELDS = [
  "constructor.prototype.cursor",
  "__proto__.x",
  "__proto__",
  "constructor",
  "prototype.limit",
  "video.constructor.prototype.status",
  "stream.__proto__.polluted",
  "video.id",
  "stream.id",
];
const EVENTS = ["VIDEO_UPLOADED", "LIVESTREAM_SCHEDULED", "LIVESTREAM_RECORDING_READY", "VIDEO_TRANSCODING_FAILED"];

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant("post" as const), path: fc.constant("/videos/"), body: bodyFor(["source_url", "title", "tags"]) }),
  fc.record({ kind: fc.constant("post" as const), path: fc.constantFrom("/livestreams/", "/livestreams/schedule/"), body: bodyFor(["title", "tags", "latency", "scheduled_at"]) }),
  fc.record({
    kind: fc.constant("post" as const),
    path: fc.constantFrom("/videos/", "/livestreams/"),
    body: fc.constantFrom(
      '{"title":"t","source_url":"http://127.0.0.1:9/p.mp4","tags":{"__proto__":{"cursor":"x","polluted":1}}}',
      '{"title":"t","tags":{"constructor":{"prototype":{"cursor":"x"}}}}',
      '{"title":"t","tags":{"constructor":"c","prototype":"p","toString":"s"}}',
      '{"__proto__":{"cursor":"x"},"title":"t"}',
    ),
  }),
  fc.record({ kind: fc.constant("webhook" as const), fields: fc.subarray(HOSTILE_FIELDS, { minLength: 1 }), events: fc.subarray(EVENTS, { minLength: 1 }) }),
  fc.record({ kind: fc.constant("test" as const), event: fc.constantFrom(...EVENTS) }),
  fc.record({ kind: fc.constant("list" as const), path: fc.constantFrom("/videos/", "/livestreams/", "/webhooks/"), query: queryString }),
  fc.record({
    kind: fc.constant("probeB" as const),
    method: fc.constant("GET"),
    path: fc.constantFrom<(b: typeof B) => string>(
      (b) => `/videos/${b.video}/`,
      (b) => `/livestreams/${b.stream}/`,
      (b) => `/webhooks/${b.endpoint}/`,
      (b) => `/webhooks/${b.endpoint}/deliveries/`,
    ),
  }),
  fc.record({
    kind: fc.constant("probeB" as const),
    method: fc.constantFrom("DELETE", "POST"),
    path: fc.constantFrom<(b: typeof B) => string>(
      (b) => `/videos/${b.video}/`,
      (b) => `/livestreams/${b.stream}/`,
      (b) => `/livestreams/${b.booked}/end/`,
      (b) => `/livestreams/${b.stream}/end/`,
      (b) => `/webhooks/${b.endpoint}/`,
      (b) => `/webhooks/${b.endpoint}/test/`,
      (b) => `/webhooks/${b.endpoint}/deliveries/${b.delivery}/retry/`,
    ),
    body: fc.constantFrom(undefined, '{"event":"LIVESTREAM_RECORDING_READY"}', "{}"),
  }),
  fc.record({ kind: fc.constant("deleteOwn" as const), what: fc.constantFrom("videos" as const, "livestreams" as const, "webhooks" as const) }),
);

async function run(a: Action) {
  switch (a.kind) {
    case "post": {
      const r = await call(A.key, "POST", a.path, { body: a.body });
      if (r.status === 201 && a.path === "/videos/") A.videos.push(r.body.data.asset.public_id);
      if (r.status === 201 && a.path.startsWith("/livestreams/")) A.streams.push(r.body.data.stream.id);
      return;
    }
    case "webhook": {
      // Another part of the service refuses such paths (422); either way B must not notice.
      const r = await call(A.key, "POST", "/webhooks/", { body: JSON.stringify({ url: "https://127.0.0.1:9/a", events: a.events, fields: a.fields }) });
      expect([201, 422]).toContain(r.status);
      if (r.status === 201) A.endpoints.push(r.body.data.endpoint.id);
      return;
    }
    case "test": {
      const id = A.endpoints.at(-1);
      if (!id) return;
      const r = await call(A.key, "POST", `/webhooks/${id}/test/`, { body: JSON.stringify({ event: a.event }) });
      expect([201, 404]).toContain(r.status);
      return;
    }
    case "list":
      await call(A.key, "GET", a.path, { query: a.query });
      return;
    case "probeB": {
      // B's ids answer A exactly like ids that do not exist (a body the route refuses may be named first; a method the
      // path does not take is 405 whatever the id).
      const r = await call(A.key, a.method, a.path(B), { body: a.body });
      expect([404, 405, 422]).toContain(r.status);
      expect(r.body.error.code).toBe(({ 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 422: "VALIDATION_ERROR" } as Record<number, string>)[r.status]!);
      return;
    }
    case "deleteOwn": {
      const list = a.what === "videos" ? A.videos : a.what === "livestreams" ? A.streams : A.endpoints;
      const id = list.pop();
      if (id) expect((await call(A.key, "DELETE", `/${a.what}/${id}/`)).status).toBe(200);
      return;
    }
  }
}

test(`no sequence of A's requests changes B's answers (${RUNS} random sequences)`, async () => {
  const before = await snapshotB();
  for (const [path, answer] of Object.entries(before)) expect({ path, status: (answer as { status: number }).status }).toEqual({ path, status: 200 });
  await fc.assert(
    fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 12 }), async (actions) => {
      for (const a of actions) await run(a);
      expect(await snapshotB()).toEqual(before);
    }),
    { numRuns: RUNS },
  );
  // Background work A caused (event fan-out through its fields filters, transcode failures) has run by now too.
  await Bun.sleep(1_500);
  expect(await snapshotB()).toEqual(before);
  expect(Object.keys(Object.prototype)).toEqual([]);
  expect(({} as Record<string, unknown>).cursor).toBeUndefined();
}, 120_000);
