/**
 * Every real answer of a running service matches the OpenAPI document: each
 * response body is validated (ajv, JSON Schema 2020-12, strict) against the
 * schema the document gives for that operation and status, and every webhook
 * delivered to a real receiver against the document's `webhooks` entry.
 * The schemas are `additionalProperties: false`, so a field the code sends
 * but the document does not list fails here (and in tsc, through `Equals`).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { join } from "node:path";
import { EVENT_NAMES } from "../src/webhooks/event-names.ts";
import { sampleEventData } from "../src/webhooks/sample-events.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { WEBHOOK_ENV } from "./support/webhook-fixture.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.ts";
import { failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

const FIXTURE = join(import.meta.dir, "../fixtures/av-720p-3s.mp4");
const PREFIX = "/api/public/v1";

let t: TestService;
let receiver: WebhookReceiver;
let doc: any;
const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
addFormats(ajv);
const checked: string[] = [];

/** `#/components/schemas/X` inlined, so each schema compiles on its own. */
function inline(schema: any): any {
  if (Array.isArray(schema)) return schema.map(inline);
  if (typeof schema !== "object" || schema === null) return schema;
  if (typeof schema.$ref === "string") return inline(doc.components.schemas[schema.$ref.split("/").pop()]);
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inline(v)]));
}

function expectValid(schema: any, body: unknown, what: string) {
  expect(schema, `${what}: no schema in the document`).toBeDefined();
  const validate = ajv.compile(inline(schema));
  const ok = validate(body);
  expect(ok ? [] : (validate.errors ?? []).map((e) => `${what} ${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`)).toEqual([]);
  checked.push(what);
}

/** Calls the API and validates the answer against the document's schema for `template` + method + status. */
async function call(method: string, path: string, template: string, init: { json?: unknown; key?: string | null } = {}) {
  const res = await t.api(path, { method, ...init });
  const body = await res.json();
  const op = doc.paths[`${PREFIX}${template}`]?.[method.toLowerCase()];
  expect(op, `${method} ${template} is not in the document`).toBeDefined();
  const response = op.responses[String(res.status)];
  expect(response, `${method} ${template} answered ${res.status}, which the document does not list`).toBeDefined();
  expectValid(response.content["application/json"].schema, body, `${method} ${template} ${res.status}`);
  // Untyped on purpose: this helper reads every route the test calls (success or error) and the test walks the answer by key; the typed readers are test/support/api.ts.
  return { status: res.status, body: body as any };
}

/** A request outside `t.api` (tus, the presigned PUT): its status must be listed for the operation, its body match. */
async function answer(method: string, url: string, template: string, init: RequestInit = {}) {
  const res = await fetch(url, { method, ...init });
  const op = doc.paths[template]?.[method.toLowerCase()];
  expect(op, `${method} ${template} is not in the document`).toBeDefined();
  const response = op.responses[String(res.status)];
  expect(response, `${method} ${template} answered ${res.status}, which the document does not list`).toBeDefined();
  const schema = response.content?.["application/json"]?.schema;
  // HEAD answers the status and headers only.
  if (method !== "HEAD" && schema) expectValid(schema, await res.json(), `${method} ${template} ${res.status}`);
  else checked.push(`${method} ${template} ${res.status}`);
  return res;
}

beforeAll(async () => {
  receiver = startWebhookReceiver();
  t = await startTestService({ env: WEBHOOK_ENV });
  doc = await (await fetch(`${t.base}/openapi/json`)).json();
});
afterAll(async () => {
  receiver.stop();
  await t.stop({ cleanup: true });
});

describe("responses match the document", () => {
  let videoId = "";
  let endpointId = "";

  test("organization, webhook endpoint, errors", async () => {
    expect((await call("GET", "/organization/", "/organization/")).status).toBe(200);
    expect((await call("GET", "/organization/", "/organization/", { key: null })).status).toBe(401);
    expect((await call("GET", "/organization/", "/organization/", { key: "sk_live_nope_nope" })).status).toBe(401);
    const created = await call("POST", "/webhooks/", "/webhooks/", { json: { url: receiver.url, events: [...EVENT_NAMES], description: "shapes" } });
    expect(created.status).toBe(201);
    endpointId = created.body.data.endpoint.id;
    expect((await call("POST", "/webhooks/", "/webhooks/", { json: { url: "http://plain.example.com/", events: [] } })).status).toBe(422);
    expect((await call("GET", "/webhooks/", "/webhooks/")).status).toBe(200);
    expect((await call("GET", `/webhooks/${endpointId}/`, "/webhooks/{endpoint_id}/")).status).toBe(200);
    expect((await call("GET", "/webhooks/we_missing/", "/webhooks/{endpoint_id}/")).status).toBe(404);
    expect((await call("GET", "/videos/?limit=0", "/videos/")).status).toBe(422);
    expect((await call("GET", "/videos/vid_missing/", "/videos/{id}/")).status).toBe(404);
  });

  test("a video by upload: upload URL, register (201, then 200), get while transcoding and once COMPLETED, list, DRM token refused", async () => {
    const size = Bun.file(FIXTURE).size;
    const slot = await call("POST", "/videos/upload-url/", "/videos/upload-url/", { json: { size_bytes: size } });
    expect(slot.status).toBe(201);
    expect((await fetch(slot.body.data.upload_url, { method: "PUT", body: Bun.file(FIXTURE) })).ok).toBe(true);
    const registered = await call("POST", "/videos/", "/videos/", { json: { source_url: slot.body.data.source_url, title: "Shapes" } });
    expect(registered.status).toBe(201);
    videoId = registered.body.data.video.id;
    expect((await call("POST", "/videos/", "/videos/", { json: { source_url: slot.body.data.source_url } })).status).toBe(200);
    expect((await call("POST", "/videos/", "/videos/", { json: { source_url: "ftp://x", colour: "red" } })).status).toBe(422);
    expect((await call("GET", `/videos/${videoId}/`, "/videos/{id}/")).status).toBe(200);
    const done = await waitFor(
      async () => {
        const r = await t.api(`/videos/${videoId}/`);
        const b = await ok(r, "getVideo");
        return b.data.video.status !== "TRANSCODING" && b;
      },
      { timeoutMs: 25_000, what: "the transcode to end" },
    );
    expect(done.data.video.status).toBe("COMPLETED");
    const completed = await call("GET", `/videos/${videoId}/`, "/videos/{id}/");
    expect(completed.body.data.renditions.length).toBeGreaterThan(0);
    expect((await call("GET", "/videos/?limit=5", "/videos/")).body.data.items.length).toBe(1);
    expect((await call("POST", `/videos/${videoId}/drm-token/`, "/videos/{id}/drm-token/")).status).toBe(409);
  }, 120_000);

  test("live streams: create, schedule, get, list, end, delete", async () => {
    const created = await call("POST", "/livestreams/", "/livestreams/", { json: { title: "Shapes live" } });
    expect(created.status).toBe(201);
    const id = created.body.data.stream.id;
    const at = new Date(Date.now() + 3_600_000).toISOString();
    expect((await call("POST", "/livestreams/schedule/", "/livestreams/schedule/", { json: { title: "Booked", scheduled_at: at } })).status).toBe(201);
    expect((await call("POST", "/livestreams/schedule/", "/livestreams/schedule/", { json: { title: "Past", scheduled_at: "2001-01-01T00:00:00Z" } })).status).toBe(422);
    expect((await call("GET", `/livestreams/${id}/`, "/livestreams/{id}/")).status).toBe(200);
    expect((await call("GET", "/livestreams/", "/livestreams/")).body.data.items.length).toBe(2);
    expect((await call("POST", `/livestreams/${id}/end/`, "/livestreams/{id}/end/")).body.data.stream.status).toBe("ENDED");
    expect((await call("DELETE", `/livestreams/${id}/`, "/livestreams/{id}/")).status).toBe(200);
    expect((await call("GET", `/livestreams/${id}/`, "/livestreams/{id}/")).status).toBe(404);
  });

  test("simulcast outputs (issue 26): with the stream, add, list, get, delete, and the refusals", async () => {
    const created = await call("POST", "/livestreams/", "/livestreams/", { json: { title: "Shapes outputs", outputs: [{ url: "rtmp://127.0.0.1:9/app/k1", name: "A" }] } });
    expect(created.body.data.stream.outputs).toHaveLength(1);
    const id = created.body.data.stream.id;
    const added = await call("POST", `/livestreams/${id}/outputs/`, "/livestreams/{id}/outputs/", { json: { url: "srt://127.0.0.1:9", stream_key: "k2" } });
    expect(added.status).toBe(201);
    const outputId = added.body.data.output.id;
    expect((await call("POST", `/livestreams/${id}/outputs/`, "/livestreams/{id}/outputs/", { json: { url: "ftp://x/app" } })).status).toBe(422);
    expect((await call("GET", `/livestreams/${id}/outputs/`, "/livestreams/{id}/outputs/")).body.data.outputs).toHaveLength(2);
    expect((await call("GET", `/livestreams/${id}/outputs/${outputId}/`, "/livestreams/{id}/outputs/{output_id}/")).status).toBe(200);
    expect((await call("DELETE", `/livestreams/${id}/outputs/${outputId}/`, "/livestreams/{id}/outputs/{output_id}/")).status).toBe(200);
    expect((await call("GET", `/livestreams/${id}/outputs/${outputId}/`, "/livestreams/{id}/outputs/{output_id}/")).status).toBe(404);
    expect((await call("DELETE", `/livestreams/${id}/`, "/livestreams/{id}/")).status).toBe(200);
  });

  test("deliveries: test event, list, retry; the endpoint deleted; the video deleted", async () => {
    const sent = await call("POST", `/webhooks/${endpointId}/test/`, "/webhooks/{endpoint_id}/test/", { json: { event: "LIVESTREAM_STARTED" } });
    expect(sent.status).toBe(201);
    const list = await call("GET", `/webhooks/${endpointId}/deliveries/`, "/webhooks/{endpoint_id}/deliveries/");
    expect(list.body.data.items.length).toBeGreaterThan(0);
    const retried = await call("POST", `/webhooks/${endpointId}/deliveries/${sent.body.data.delivery.id}/retry/`, "/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry/");
    expect(retried.status).toBe(200);
    expect((await call("DELETE", `/videos/${videoId}/`, "/videos/{id}/")).status).toBe(200);
  });

  test("every webhook the receiver got matches the document's `webhooks` entry of its event", async () => {
    // Let the deliveries of everything above arrive: at least the video's three events and the streams' four.
    await waitFor(async () => new Set(receiver.received.map((r) => r.headers.get("x-service-event"))).size >= 6 || undefined, { timeoutMs: 15_000, what: "deliveries" });
    for (const r of receiver.received) {
      const event = r.headers.get("x-service-event")!;
      expectValid(doc.webhooks[event].post.requestBody.content["application/json"].schema, JSON.parse(r.body), `webhook ${event}`);
    }
    const seen = new Set(receiver.received.map((r) => r.headers.get("x-service-event")));
    for (const e of ["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_TRANSCODING_COMPLETED", "LIVESTREAM_SCHEDULED", "LIVESTREAM_ENDED"]) expect(seen).toContain(e);
    const endpointId2 = (await ok(t.api("/webhooks/"), "listWebhooks")).data.items[0]!.id;
    expect((await call("DELETE", `/webhooks/${endpointId2}/`, "/webhooks/{endpoint_id}/")).status).toBe(200);
  }, 120_000);

  test("the presigned PUT and the tus operations: answers and refusals as documented", async () => {
    const auth = { authorization: `Bearer ${t.apiKey}` };
    const slot = async () => (await call("POST", "/videos/upload-url/", "/videos/upload-url/", { json: { size_bytes: 3 } })).body.data;
    const put = (url: string, body: string) => answer("PUT", url, "/uploads/{id}", { body });
    const first = await slot();
    expect((await put(first.upload_url, "abc")).status).toBe(200);
    expect((await put(first.upload_url, "abc")).status).toBe(404);
    expect((await put(first.upload_url.replace(/sig=\w/, "sig=z"), "abc")).status).toBe(403);
    expect((await put((await slot()).upload_url, "")).status).toBe(422);

    const TUS = `${t.base}${PREFIX}/videos/uploads/`;
    const create = `${PREFIX}/videos/uploads/`;
    const one = `${PREFIX}/videos/uploads/{id}`;
    const tus = { ...auth, "tus-resumable": "1.0.0" };
    const made = await answer("POST", TUS, create, { headers: { ...tus, "upload-length": "3" } });
    expect(made.status).toBe(201);
    const loc = made.headers.get("location")!;
    expect((await answer("POST", TUS, create, { headers: { ...auth, "upload-length": "3" } })).status).toBe(412);
    expect((await answer("POST", TUS, create, { headers: { ...tus } })).status).toBe(400);
    expect((await answer("POST", TUS, create, { headers: { ...tus, "upload-length": String(1e15) } })).status).toBe(413);
    expect((await answer("POST", TUS, create, { headers: { ...tus, "upload-defer-length": "1" } })).status).toBe(501);
    expect((await answer("POST", TUS, create, { headers: { ...tus, authorization: "Bearer sk_live_nope_nope", "upload-length": "3" } })).status).toBe(401);
    expect((await answer("POST", `${TUS}?token=forged`, create, { headers: { "tus-resumable": "1.0.0", "upload-length": "3" } })).status).toBe(403);
    const bytes = { ...tus, "content-type": "application/offset+octet-stream" };
    const noOffset = await answer("PATCH", loc, one, { headers: bytes, body: "abc" });
    expect(noOffset.status).toBe(403);
    expect((await answer("PATCH", loc, one, { headers: { ...bytes, "upload-offset": "2" }, body: "abc" })).status).toBe(409);
    expect((await answer("PATCH", loc, one, { headers: { ...bytes, "upload-offset": "0", "content-type": "text/plain" }, body: "abc" })).status).toBe(400);
    expect((await answer("PATCH", loc, one, { headers: { ...bytes, "upload-offset": "0" }, body: "abcd" })).status).toBe(413);
    expect((await answer("PATCH", `${TUS}upl_missing`, one, { headers: { ...bytes, "upload-offset": "0" }, body: "abc" })).status).toBe(404);
    expect((await answer("HEAD", loc, one, { headers: tus })).status).toBe(200);
    expect((await answer("HEAD", `${TUS}upl_missing`, one, { headers: tus })).status).toBe(404);
    expect((await answer("DELETE", `${loc}?token=forged`, one, { headers: { "tus-resumable": "1.0.0" } })).status).toBe(403);
    expect((await answer("DELETE", loc, one, { headers: tus })).status).toBe(204);
    expect((await answer("DELETE", loc, one, { headers: tus })).status).toBe(404);
  });

  test("tus answers a PATCH without Upload-Offset 403 as VALIDATION_ERROR naming the header, not PERMISSION_DENIED", async () => {
    const tus = { authorization: `Bearer ${t.apiKey}`, "tus-resumable": "1.0.0" };
    const made = await fetch(`${t.base}${PREFIX}/videos/uploads/`, { method: "POST", headers: { ...tus, "upload-length": "3" } });
    const res = await fetch(made.headers.get("location")!, { method: "PATCH", headers: { ...tus, "content-type": "application/offset+octet-stream" }, body: "abc" });
    expect(res.status).toBe(403);
    expect((await failed(res)).error).toEqual({ code: "VALIDATION_ERROR", details: { "Upload-Offset": "is required" } });
  });

  test("the sample payload of every event (POST …/test/, cli trigger) matches the document", () => {
    for (const event of EVENT_NAMES) {
      const body = { event, created_at: new Date().toISOString(), data: sampleEventData(event, { baseUrl: t.base }) };
      expectValid(doc.webhooks[event].post.requestBody.content["application/json"].schema, body, `sample ${event}`);
    }
  });

  test("a body the document does not describe fails the check (the validator is not vacuous)", () => {
    const schema = inline(doc.paths[`${PREFIX}/organization/`].get.responses["200"].content["application/json"].schema);
    const validate = ajv.compile(schema);
    expect(validate({ success: true, message: "OK", data: { organization: { id: "org_1", extra: 1 } }, meta: { timestamp: new Date().toISOString() } })).toBe(false);
    expect(checked.length).toBeGreaterThan(30);
  });
});
