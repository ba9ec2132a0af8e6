import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { count, eq } from "drizzle-orm";
import fc from "fast-check";
import { actors, uploads, webhookDeliveries, webhookEndpoints } from "../src/db/schema/index.ts";
import { bodyFor, idFor, queryKeys, queryString } from "./support/fuzz-arbitraries.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { type OperationId, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

// Property-based fuzzing of every API route against the real service: any body,
// query string or path id gets the envelope (or the short 401), never a 5xx,
// and nothing is created unless the input was valid.

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SHORT_401 = { success: false, message: "Invalid or missing API key.", error: { code: "INVALID_API_KEY" } };

let t: TestService;
let total = 0;
/** Answers per route and status, printed at the end: the mix shows valid inputs were generated too. */
const statuses = new Map<string, Map<number, number>>();
function tally(route: string, status: number) {
  const m = statuses.get(route) ?? new Map<number, number>();
  m.set(status, (m.get(status) ?? 0) + 1);
  statuses.set(route, m);
}
const real = { video: [] as string[], stream: [] as string[], endpoint: [] as string[], delivery: [] as string[] };

beforeAll(async () => {
  t = await startTestService({
    env: { WEBHOOK_TIMEOUT_MS: "500", LIVE_SLOTS: "100000", LIVE_SLOTS_PER_ORG: "100000", TRANSCODE_WORKERS: "1", SOURCE_TIMEOUT_MS: "2000" },
  });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, limits: { ...s.limits, uploadUrlPerMinute: 1_000_000, videosCreatePerMinute: 1_000_000, livestreamsCreatePerMinute: 1_000_000 } }));
  const post = async <Op extends OperationId>(path: string, json: unknown, op: Op) => ok(t.api(path, { method: "POST", json }), op);
  for (let i = 0; i < 2; i++) {
    real.video.push((await post("/videos/", { source_url: `http://127.0.0.1:9/fixture-${i}.mp4` }, "createVideo")).data.asset.public_id);
    real.stream.push((await post("/livestreams/", { title: `fixture ${i}` }, "createLivestream")).data.stream.id);
    real.endpoint.push((await post("/webhooks/", { url: "https://127.0.0.1:9/hook", events: ["VIDEO_UPLOADED"] }, "createWebhook")).data.endpoint.id);
  }
  real.delivery.push((await post(`/webhooks/${real.endpoint[0]}/test/`, { event: "VIDEO_UPLOADED" }, "testWebhook")).data.delivery.id);
});

afterAll(async () => {
  console.log(`fuzz: ${total} cases run against ${routesRun} routes (${RUNS} per route, shrinking included)`);
  for (const [route, m] of statuses)
    console.log(
      `  ${route}: ${[...m]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(" ")}`,
    );
  await t.stop();
});

async function counts() {
  const db = t.service.database.db;
  const n = async (q: Promise<Array<{ n: number }>>) => Number((await q)[0]!.n);
  return {
    video: await n(db.select({ n: count() }).from(actors).where(eq(actors.kind, "video"))),
    livestream: await n(db.select({ n: count() }).from(actors).where(eq(actors.kind, "livestream"))),
    upload: await n(db.select({ n: count() }).from(uploads)),
    endpoint: await n(db.select({ n: count() }).from(webhookEndpoints)),
    // Test deliveries only: real events fan out to subscribed endpoints in the background at any time.
    delivery: await n(db.select({ n: count() }).from(webhookDeliveries).where(eq(webhookDeliveries.test, true))),
  };
}
type Counts = Awaited<ReturnType<typeof counts>>;

/** Sends one request and checks the answer is the envelope, below 500. */
async function send(method: string, path: string, opts: { query?: string; body?: string } = {}) {
  total++;
  const headers: Record<string, string> = { authorization: `Bearer ${t.apiKey}` };
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const url = `${t.base}/api/public/v1${path}${opts.query ? `?${opts.query}` : ""}`;
  const res = await fetch(url, { method, headers, body: opts.body });
  const text = await res.text();
  if (res.status >= 500) throw new Error(`${method} ${path} → ${res.status}: ${text.slice(0, 300)}`);
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${method} ${path} → ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (res.status === 401) expect(body).toEqual(SHORT_401);
  else {
    expect(typeof body.success).toBe("boolean");
    expect(body.success).toBe(res.status < 400);
    expect(typeof body.meta?.timestamp).toBe("string");
    if (!body.success) expect(typeof body.error?.code).toBe("string");
  }
  return { status: res.status, body };
}

/** Necessary conditions for a body to be valid: parses, is an object (or nothing), no unknown field, required fields present. */
function mayBeValid(raw: string | undefined, fields: string[], required: string[]): { valid: boolean; unknown: boolean } {
  if (raw === undefined || raw === "") return { valid: required.length === 0, unknown: false };
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return { valid: false, unknown: false };
  }
  if (v === null) return { valid: required.length === 0, unknown: false };
  if (typeof v !== "object" || Array.isArray(v)) return { valid: false, unknown: false };
  const keys = Object.keys(v as object);
  const unknown = keys.some((k) => !fields.includes(k));
  const missing = required.some((k) => (v as Record<string, unknown>)[k] === undefined || (v as Record<string, unknown>)[k] === null);
  const tags = Object.hasOwn(v as object, "tags") ? (v as Record<string, unknown>).tags : undefined;
  const badTags = tags !== undefined && tags !== null && (typeof tags !== "object" || Array.isArray(tags));
  return { valid: !unknown && !missing && !badTags && raw.length <= 1024 * 1024, unknown };
}

let routesRun = 0;

interface CreateRoute {
  name: string;
  path: () => fc.Arbitrary<string>;
  fields: string[];
  required: string[];
  creates: keyof Counts | null;
}

const createRoutes: CreateRoute[] = [
  { name: "POST /videos/", path: () => fc.constant("/videos/"), fields: ["source_url", "title", "drm_enabled", "subtitles", "tags"], required: ["source_url"], creates: "video" },
  { name: "POST /videos/upload-url/", path: () => fc.constant("/videos/upload-url/"), fields: ["filename", "size_bytes"], required: [], creates: "upload" },
  { name: "POST /livestreams/", path: () => fc.constant("/livestreams/"), fields: ["title", "latency", "drm_enabled", "tags"], required: ["title"], creates: "livestream" },
  {
    name: "POST /livestreams/schedule/",
    path: () => fc.constant("/livestreams/schedule/"),
    fields: ["title", "latency", "drm_enabled", "tags", "scheduled_at"],
    required: ["title", "scheduled_at"],
    creates: "livestream",
  },
  { name: "POST /webhooks/", path: () => fc.constant("/webhooks/"), fields: ["url", "events", "fields", "description"], required: ["url", "events"], creates: "endpoint" },
  { name: "POST /webhooks/{id}/test/", path: () => idFor(real.endpoint).map((id) => `/webhooks/${id}/test/`), fields: ["event"], required: ["event"], creates: "delivery" },
  {
    name: "POST /webhooks/{id}/deliveries/{id}/retry/",
    path: () => fc.tuple(idFor(real.endpoint), idFor(real.delivery)).map(([e, d]) => `/webhooks/${e}/deliveries/${d}/retry/`),
    fields: [],
    required: [],
    creates: null,
  },
  { name: "POST /livestreams/{id}/end/", path: () => idFor(real.stream).map((id) => `/livestreams/${id}/end/`), fields: [], required: [], creates: null },
];

describe("bodies: every POST route", () => {
  for (const route of createRoutes) {
    test(`${route.name}: ${RUNS} arbitrary bodies`, async () => {
      routesRun++;
      await fc.assert(
        fc.asyncProperty(route.path(), bodyFor(route.fields), async (path, body) => {
          const before = await counts();
          const r = await send("POST", path, { body });
          tally(route.name, r.status);
          const after = await counts();
          const { valid, unknown } = mayBeValid(body, route.fields, route.required);
          // Routes at a fixed path refuse unknown fields by name; behind an id, a malformed id may be refused first.
          const fixedPath = !route.name.includes("{id}");
          // Past 1 MiB the body is refused while read (413), before its fields are looked at.
          if (unknown && fixedPath) expect(r.status).toBe(body !== undefined && body.length > 1024 * 1024 ? 413 : 422);
          else if (unknown) expect(r.status).toBeGreaterThanOrEqual(400);
          if (r.status >= 200 && r.status < 300 && route.creates) expect(valid).toBe(true);
          for (const k of Object.keys(before) as Array<keyof Counts>) {
            const grew = after[k] - before[k];
            if (r.status >= 400 || !valid) expect({ [k]: grew }).toEqual({ [k]: 0 });
            else if (k !== route.creates && !(route.name.startsWith("POST /livestreams/{id}/end/") && k === "video")) expect({ [k]: grew }).toEqual({ [k]: 0 });
            else expect(grew).toBeLessThanOrEqual(1);
          }
        }),
        { numRuns: RUNS },
      );
    }, 600_000);
  }
});

interface ReadRoute {
  name: string;
  method: "GET" | "DELETE";
  path: () => fc.Arbitrary<string>;
  /** Query parameters the route knows; null: it takes none and ignores them (no list). */
  query: string[] | null;
}

const readRoutes: ReadRoute[] = [
  { name: "GET /organization/", method: "GET", path: () => fc.constant("/organization/"), query: null },
  { name: "GET /videos/", method: "GET", path: () => fc.constant("/videos/"), query: ["limit", "cursor", "status", "kind"] },
  { name: "GET /videos/{id}/", method: "GET", path: () => idFor(real.video).map((id) => `/videos/${id}/`), query: null },
  { name: "GET /livestreams/", method: "GET", path: () => fc.constant("/livestreams/"), query: ["limit", "cursor", "status"] },
  { name: "GET /livestreams/{id}/", method: "GET", path: () => idFor(real.stream).map((id) => `/livestreams/${id}/`), query: null },
  { name: "GET /webhooks/", method: "GET", path: () => fc.constant("/webhooks/"), query: ["limit", "cursor"] },
  { name: "GET /webhooks/{id}/", method: "GET", path: () => idFor(real.endpoint).map((id) => `/webhooks/${id}/`), query: null },
  { name: "GET /webhooks/{id}/deliveries/", method: "GET", path: () => idFor(real.endpoint).map((id) => `/webhooks/${id}/deliveries/`), query: ["limit", "cursor"] },
  // Deletions last: they may remove the fixtures the other routes read.
  { name: "DELETE /videos/{id}/", method: "DELETE", path: () => idFor(real.video).map((id) => `/videos/${id}/`), query: null },
  { name: "DELETE /livestreams/{id}/", method: "DELETE", path: () => idFor(real.stream).map((id) => `/livestreams/${id}/`), query: null },
  { name: "DELETE /webhooks/{id}/", method: "DELETE", path: () => idFor(real.endpoint).map((id) => `/webhooks/${id}/`), query: null },
];

describe("query strings and path ids: every GET and DELETE route", () => {
  for (const route of readRoutes) {
    test(`${route.name}: ${RUNS} arbitrary ids and query strings`, async () => {
      routesRun++;
      await fc.assert(
        fc.asyncProperty(route.path(), queryString, async (path, query) => {
          const before = await counts();
          const r = await send(route.method, path, { query });
          tally(route.name, r.status);
          const after = await counts();
          for (const k of Object.keys(before) as Array<keyof Counts>) expect(after[k]).toBeLessThanOrEqual(before[k]);
          // A list refuses unknown query parameters by name (a malformed id in the path may be refused first).
          const idIsReal = !path.includes("/webhooks/") || real.endpoint.some((id) => path.startsWith(`/webhooks/${id}/`)) || path === "/webhooks/";
          if (route.query && idIsReal) {
            const unknown = queryKeys(query).filter((k) => !route.query!.includes(k));
            if (unknown.length > 0) {
              expect(r.status).toBe(422);
              for (const k of unknown) expect(r.body.error.details).toHaveProperty([k]);
            }
          }
          if (route.method === "GET" && r.status === 200 && route.query) expect(Array.isArray(r.body.data.items)).toBe(true);
        }),
        { numRuns: RUNS },
      );
    }, 600_000);
  }
});

test("nothing the fuzzer sent reached Object.prototype", () => {
  expect(Object.keys(Object.prototype)).toEqual([]);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(({} as Record<string, unknown>).cursor).toBeUndefined();
});
