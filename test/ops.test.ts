import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { createLogger } from "../src/log.ts";
import { waitFor } from "./support/events.ts";
import { startSqld } from "./support/sqld.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { startWebhookReceiver, TEST_CA_FILE, type WebhookReceiver } from "./support/webhook-receiver.ts";
import { failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

const FIXTURES = join(import.meta.dir, "../fixtures");
const lines: string[] = [];
let t: TestService;
let rx: WebhookReceiver;

beforeAll(async () => {
  t = await startTestService({
    env: { WEBHOOK_CA_FILE: TEST_CA_FILE, WEBHOOK_RETRY_SCHEDULE: "0.1,0.1,0.1", WEBHOOK_TIMEOUT_MS: "500", LOG_LEVEL: "debug" },
    logger: createLogger({ level: "debug", write: (l) => lines.push(l) }),
  });
  // The first delivery fails with a 500, the second hangs past the timeout, the rest succeed.
  rx = startWebhookReceiver((_req, nth) => (nth === 1 ? new Response("no", { status: 500 }) : nth === 2 ? "hang" : new Response(null, { status: 204 })));
});
afterAll(async () => {
  rx?.stop();
  await t?.stop();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses the Prometheus text exposition format (version 0.0.4) strictly:
 * every line is a HELP, a TYPE, or a sample of a family declared by a TYPE
 * before it, with well-formed labels and a numeric value. Throws otherwise.
 */
function parsePrometheus(text: string): Sample[] {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const sampleLine = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (-?[0-9.e+-]+|NaN|[+-]Inf)( -?\\d+)?$`);
  const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      if (meta[1] === "TYPE") {
        if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(meta[3]!)) throw new Error(`bad TYPE: ${line}`);
        types.set(meta[2]!, meta[3]!);
      }
      continue;
    }
    const m = sampleLine.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const name = m[1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count|total|created)$/, "");
    if (!types.has(family) && !types.has(name)) throw new Error(`sample without TYPE: ${line}`);
    const labels: Record<string, string> = {};
    let rest = m[2] ?? "";
    while (rest.length > 0) {
      const l = label.exec(rest);
      if (!l) throw new Error(`bad labels: ${line}`);
      labels[l[1]!] = l[2]!;
      rest = rest.slice(l[0].length).replace(/^,/, "");
    }
    samples.push({ name, labels, value: Number(m[3]!.replace("Inf", "Infinity")) });
  }
  return samples;
}

async function scrape(base = t.base, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(`${base}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return parsePrometheus(await res.text());
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) => samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

const logEntries = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

describe("probes", () => {
  test("/healthz answers 200 {status: ok} without a key", async () => {
    const res = await fetch(`${t.base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  test("/readyz answers 200 when the database, storage, transcoder and ingest are ready", async () => {
    const res = await fetch(`${t.base}/readyz`);
    expect(res.status).toBe(200);
    const body = await ok(res, "getReadiness");
    expect(body.status).toBe("ready");
    expect(body.failed).toEqual([]);
    for (const check of ["database", "storage", "transcoder", "ingest"] as const) expect(body.checks[check].ok).toBe(true);
  });

  test("the probes and /metrics are documented in the OpenAPI document, without security", async () => {
    // Untyped on purpose: the OpenAPI document itself (not an API answer), walked by path and key; the test asserts each step it reads.
    const doc = (await (await fetch(`${t.base}/openapi/json`)).json()) as any;
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      expect(doc.paths[path]?.get).toBeDefined();
      expect(doc.paths[path].get.security).toEqual([]);
    }
  });
});

describe("request ids and the access log", () => {
  test("X-Request-Id is echoed when sane, generated when absent or invalid, on successes, 401s, 404s and error envelopes", async () => {
    const given = "req-42.abc_XYZ";
    expect((await t.api("/organization/", { headers: { "x-request-id": given } })).headers.get("x-request-id")).toBe(given);

    const generated = (await t.api("/organization/")).headers.get("x-request-id");
    expect(generated).toMatch(/^[A-Za-z0-9._-]{8,128}$/);
    for (const bad of ["has space", "a".repeat(129), "semi;colon", "<script>"]) {
      const id = (await t.api("/organization/", { headers: { "x-request-id": bad } })).headers.get("x-request-id");
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[A-Za-z0-9._-]{8,128}$/);
    }

    const unauthorized = await t.api("/videos/", { key: null, headers: { "x-request-id": "r-401" } });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get("x-request-id")).toBe("r-401");
    const noRoute = await fetch(`${t.base}/no/such/route`, { headers: { "x-request-id": "r-404" } });
    expect(noRoute.status).toBe(404);
    expect(noRoute.headers.get("x-request-id")).toBe("r-404");
    const invalid = await t.api("/videos/", { method: "POST", json: { source_url: 42 }, headers: { "x-request-id": "r-422" } });
    expect(invalid.status).toBe(422);
    expect((await failed(invalid)).success).toBe(false);
    expect(invalid.headers.get("x-request-id")).toBe("r-422");
  });

  test("one access line per request carries the request id, the route template and the organization, never the API key", async () => {
    const res = await t.api("/videos/vid_doesnotexist0000000/", { headers: { "x-request-id": "r-access-1" } });
    expect(res.status).toBe(404);
    await t.api("/videos/", { key: `${t.apiKey}x`, headers: { "x-request-id": "r-access-2" } });
    const access = logEntries().filter((e) => e.msg === "HTTP request");
    const found = access.filter((e) => e.request_id === "r-access-1");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ level: "info", method: "GET", route: "/api/public/v1/videos/:id/", status: 404, org_id: t.orgId, request_id: "r-access-1" });
    expect(typeof found[0]!.duration_ms).toBe("number");
    const refused = access.find((e) => e.request_id === "r-access-2");
    expect(refused).toMatchObject({ status: 401, route: "/api/public/v1/videos/" });
    expect(refused!.org_id).toBeUndefined();
    const secret = t.apiKey.split("_")[3]!;
    expect(lines.join("\n")).not.toContain(secret);
  });
});

describe("metrics", () => {
  test("parse as Prometheus text, count requests by route template and status, and carry no ids", async () => {
    const before = find(await scrape(), "vidlive_http_requests_total", { method: "GET", route: "/api/public/v1/videos/:id/", status: "404" })?.value ?? 0;
    const res = await t.api("/videos/vid_notthere000000000000/");
    expect(res.status).toBe(404);
    await fetch(`${t.base}/completely/unknown/path-abc123`);
    const samples = await scrape();
    expect(find(samples, "vidlive_http_requests_total", { method: "GET", route: "/api/public/v1/videos/:id/", status: "404" })?.value).toBe(before + 1);
    expect(find(samples, "vidlive_http_request_duration_seconds_count", { route: "/api/public/v1/videos/:id/", status: "404" })?.value).toBeGreaterThanOrEqual(1);
    expect(find(samples, "vidlive_http_request_duration_seconds_bucket", { route: "/api/public/v1/videos/:id/", status: "404", le: "+Inf" })).toBeDefined();
    expect(find(samples, "vidlive_http_requests_total", { route: "unmatched", status: "404" })).toBeDefined();
    // Process metrics, per instance.
    expect(find(samples, "vidlive_process_resident_memory_bytes")?.value).toBeGreaterThan(0);
    const labelValues = samples.flatMap((s) => Object.values(s.labels)).join("\n");
    for (const raw of ["vid_notthere", "path-abc123", t.orgId, "test"]) expect(labelValues.split("\n")).not.toContain(raw);
    expect(labelValues).not.toContain(t.orgId);
    expect(labelValues).not.toContain("vid_notthere");
  });

  test("a completed transcode shows its realtime factor, job durations and queue depth; webhook outcomes are counted", async () => {
    const hook = await t.api("/webhooks/", { method: "POST", json: { url: rx.url, events: ["VIDEO_UPLOADED", "VIDEO_TRANSCODING_COMPLETED"] } });
    expect(hook.status).toBe(201);
    const { endpoint, signing_secret: signingSecret } = (await ok(hook, "createWebhook")).data;

    const up = (await ok(t.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl")).data;
    expect((await fetch(up.upload_url, { method: "PUT", body: Bun.file(`${FIXTURES}/av-360p-2s.mp4`) })).status).toBe(200);
    const registered = await t.api("/videos/", { method: "POST", json: { source_url: up.source_url } });
    expect(registered.status).toBe(201);
    const videoId = (await ok(registered, "createVideo")).data.asset.public_id;
    await waitFor(async () => (await ok(t.api(`/videos/${videoId}/`), "getVideo")).data.video.status === "COMPLETED", { timeoutMs: 60_000, what: "COMPLETED" });

    // The receiver answered 500, then hung past WEBHOOK_TIMEOUT_MS, then 204s: each outcome once at least.
    await rx.waitFor(3, 20_000);
    const samples = await waitFor(
      async () => {
        const s = await scrape();
        // Deliveries of the two events run side by side: the hung attempt's timeout may be counted after the success.
        const counted = ["success", "failure", "timeout"].every((outcome) => (find(s, "vidlive_webhook_deliveries_total", { outcome })?.value ?? 0) >= 1);
        return counted && s;
      },
      { timeoutMs: 20_000, what: "a success, a failure and a timeout counted" },
    );
    expect(find(samples, "vidlive_webhook_deliveries_total", { outcome: "failure" })?.value).toBeGreaterThanOrEqual(1);
    expect(find(samples, "vidlive_webhook_deliveries_total", { outcome: "timeout" })?.value).toBeGreaterThanOrEqual(1);

    const rtf = find(samples, "vidlive_transcode_realtime_factor_count", { backend: "native" });
    expect(rtf?.value).toBe(1);
    expect(find(samples, "vidlive_transcode_realtime_factor_sum", { backend: "native" })!.value).toBeGreaterThan(0);
    expect(find(samples, "vidlive_job_duration_seconds_count", { type: "transcode", outcome: "done" })?.value).toBe(1);
    // Queue depth: every type and state has a series (the transcode is done, so its depth is 0).
    expect(find(samples, "vidlive_jobs", { type: "transcode", state: "queued" })?.value).toBe(0);
    expect(find(samples, "vidlive_jobs", { type: "transcode", state: "running" })?.value).toBe(0);
    expect(find(samples, "vidlive_live_streams", { status: "LIVE" })?.value).toBe(0);
    expect(find(samples, "vidlive_live_viewers")?.value).toBe(0);

    // The failed attempts were logged at warn with their ids and status, never the body or the signing secret.
    const failures = logEntries().filter((e) => e.msg === "Webhook attempt failed");
    expect(failures.length).toBeGreaterThanOrEqual(2);
    expect(failures.every((e) => e.level === "warn" && e.endpoint_id === endpoint.id && String(e.delivery_id).startsWith("dlv_"))).toBe(true);
    expect(failures.some((e) => e.status_code === 500)).toBe(true);
    const failureText = JSON.stringify(failures);
    expect(failureText).not.toContain(signingSecret.slice(6));
    expect(failureText).not.toContain(videoId);

    // Progress lines are debug, not info.
    // At least one (the 100 % line is never throttled): `every` on an empty list would pass with progress never logged.
    const progress = logEntries().filter((e) => e.msg === "Transcode progress");
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress.every((e) => e.level === "debug")).toBe(true);
  }, 90_000);

  test("a queued job shows in the queue depth", async () => {
    // A timer far in the future: a queued actor-timer row until then.
    const res = await t.api("/livestreams/schedule/", { method: "POST", json: { title: "Booked", scheduled_at: new Date(Date.now() + 3 * 86_400_000).toISOString() } });
    expect(res.status).toBe(201);
    const samples = await scrape();
    expect(find(samples, "vidlive_jobs", { type: "actor-timer", state: "queued" })?.value).toBeGreaterThanOrEqual(1);
    expect(find(samples, "vidlive_live_streams", { status: "SCHEDULED" })?.value).toBe(1);
  });
});

describe("live", () => {
  test("a live stream and its playlist clients show as live streams, broadcasts and viewers", async () => {
    const stream = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "Watched" } }), "createLivestream")).data.stream;
    const pub = publish({ url: stream.rtmp_url, form: "ffmpeg", tags: await fixtureTags(), pace: "fast", unpublishAtEnd: false });
    await pub.started;
    await waitFor(async () => (await ok(t.api(`/livestreams/${stream.id}/`), "getLivestream")).data.stream.status === "LIVE", { timeoutMs: 15_000, what: "LIVE" });
    // Two players (different user agents) reload the playlist; one of them twice.
    for (const ua of ["player-a", "player-b", "player-a"]) expect((await fetch(stream.hls_url, { headers: { "user-agent": ua } })).status).toBe(200);
    const samples = await scrape();
    expect(find(samples, "vidlive_live_viewers")?.value).toBe(2);
    expect(find(samples, "vidlive_live_streams_watched")?.value).toBe(1);
    expect(find(samples, "vidlive_live_streams", { status: "LIVE" })?.value).toBe(1);
    expect(find(samples, "vidlive_live_broadcasts")?.value).toBe(1);
    expect(find(samples, "vidlive_http_requests_total", { route: "/live/:token/:file", status: "200" })?.value).toBeGreaterThanOrEqual(3);
    expect((await t.api(`/livestreams/${stream.id}/end/`, { method: "POST" })).status).toBe(200);
    await pub.finished.catch(() => undefined);
  }, 120_000);
});

describe("METRICS_TOKEN and readiness on a database that goes away", () => {
  test("with METRICS_TOKEN, /metrics needs the bearer token; /readyz answers 503 naming the database once sqld stops", async () => {
    const sqld = await startSqld();
    const s = await startTestService({ env: { DATABASE_URL: sqld.url, METRICS_TOKEN: "tok-secret-123" } });
    try {
      expect((await fetch(`${s.base}/metrics`)).status).toBe(401);
      expect((await fetch(`${s.base}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
      await scrape(s.base, { authorization: "Bearer tok-secret-123" });
      // The probes stay open.
      expect((await fetch(`${s.base}/readyz`)).status).toBe(200);

      await sqld.stop({ keep: true });
      const res = await fetch(`${s.base}/readyz`);
      expect(res.status).toBe(503);
      const body = await failed(res, "getReadiness");
      expect(body.status).toBe("unavailable");
      expect(body.failed).toContain("database");
      expect(body.checks.database.ok).toBe(false);
      expect(body.checks.storage.ok).toBe(true);
      expect(JSON.stringify(body)).not.toContain("127.0.0.1");
      // Liveness does not depend on the database.
      expect((await fetch(`${s.base}/healthz`)).status).toBe(200);
    } finally {
      await s.stop().catch(() => undefined);
      await sqld.stop().catch(() => undefined);
    }
  }, 120_000);
});
