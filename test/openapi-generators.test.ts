/**
 * The OpenAPI document as code generators read it (issue 23, item 13):
 * operation ids are the names a person would give the methods, numeric query
 * parameters are integers, the WHIP/WHEP routes are operations, and every
 * example is a valid instance of its schema (a webhook's example is a
 * delivery of that very event). openapi-typescript runs on the document to
 * show what a generated client gets. (@hey-api/openapi-ts names its functions
 * from the same operation ids; it is not installed here.)
 */
import { beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openapiDocument } from "../scripts/openapi-document.ts";
import { EVENT_NAMES } from "../src/webhooks/event-names.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

const ROOT = join(import.meta.dir, "..");
let doc: any;

beforeAll(async () => {
  doc = await openapiDocument("http://localhost:8080");
}, 60_000);

type Op = { method: string; path: string; op: any };
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];
const operations = (): Op[] =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({ method, path, op })),
  );

test("every operation id is a name a person would choose: camelCase verb + resource, unique", () => {
  const ops = operations();
  const ids = ops.map((o) => o.op.operationId);
  const webhookIds = Object.values(doc.webhooks as Record<string, any>).map((w) => w.post.operationId);
  const all = [...ids, ...webhookIds];
  expect(all.filter((id) => typeof id !== "string")).toEqual([]);
  expect(all.filter((id, i) => all.indexOf(id) !== i)).toEqual([]);
  // Elysia's fallback is the method and the path (`postApiPublicV1Videos`, `getApiPublicV1WebhooksByEndpoint_idDeliveries`).
  const derived = all.filter((id) => !/^[a-z]+(?:[A-Z][a-z0-9]*)+$/.test(id) || /Api|V1|By[A-Z]|_|-/.test(id) || /^(post|put|patch|head)[A-Z]/.test(id));
  expect(derived).toEqual([]);
  const byRoute = Object.fromEntries(ops.map((o) => [`${o.method.toUpperCase()} ${o.path}`, o.op.operationId]));
  const v1 = "/api/public/v1";
  expect(byRoute).toMatchObject({
    [`GET ${v1}/organization/`]: "getOrganization",
    [`POST ${v1}/videos/`]: "createVideo",
    [`GET ${v1}/videos/`]: "listVideos",
    [`GET ${v1}/videos/{id}/`]: "getVideo",
    [`DELETE ${v1}/videos/{id}/`]: "deleteVideo",
    [`POST ${v1}/videos/upload-url/`]: "createUploadUrl",
    [`POST ${v1}/videos/{id}/drm-token/`]: "createDrmToken",
    [`POST ${v1}/videos/uploads/`]: "createTusUpload",
    [`HEAD ${v1}/videos/uploads/{id}`]: "getTusUploadOffset",
    [`PATCH ${v1}/videos/uploads/{id}`]: "appendTusUpload",
    [`DELETE ${v1}/videos/uploads/{id}`]: "deleteTusUpload",
    [`POST ${v1}/livestreams/`]: "createLivestream",
    [`GET ${v1}/livestreams/`]: "listLivestreams",
    [`POST ${v1}/livestreams/schedule/`]: "scheduleLivestream",
    [`GET ${v1}/livestreams/{id}/`]: "getLivestream",
    [`DELETE ${v1}/livestreams/{id}/`]: "deleteLivestream",
    [`POST ${v1}/livestreams/{id}/end/`]: "endLivestream",
    [`POST ${v1}/webhooks/`]: "createWebhook",
    [`GET ${v1}/webhooks/`]: "listWebhooks",
    [`GET ${v1}/webhooks/{endpoint_id}/`]: "getWebhook",
    [`DELETE ${v1}/webhooks/{endpoint_id}/`]: "deleteWebhook",
    [`GET ${v1}/webhooks/{endpoint_id}/deliveries/`]: "listWebhookDeliveries",
    [`POST ${v1}/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry/`]: "retryWebhookDelivery",
    [`POST ${v1}/webhooks/{endpoint_id}/test/`]: "testWebhook",
    [`GET ${v1}/webhooks/listen/`]: "listenWebhookEvents",
    [`POST ${v1}/webhooks/trigger/`]: "triggerWebhookEvent",
    [`POST ${v1}/signing-keys/`]: "createSigningKey",
    [`GET ${v1}/signing-keys/`]: "listSigningKeys",
    [`DELETE ${v1}/signing-keys/{id}/`]: "deleteSigningKey",
    [`POST ${v1}/playback-restrictions/`]: "createPlaybackRestriction",
    [`GET ${v1}/playback-restrictions/`]: "listPlaybackRestrictions",
    [`GET ${v1}/playback-restrictions/{id}/`]: "getPlaybackRestriction",
    [`DELETE ${v1}/playback-restrictions/{id}/`]: "deletePlaybackRestriction",
    "PUT /uploads/{id}": "uploadFile",
    "POST /drm/clearkey/{videoId}/license": "requestDrmLicense",
    "POST /live/{token}/whip": "createWhipSession",
    "DELETE /live/{token}/whip/{session}": "deleteWhipSession",
    "POST /live/{token}/whep": "createWhepSession",
    "DELETE /live/{token}/whep/{session}": "deleteWhepSession",
  });
});

test("numeric query parameters are integers (limit, after, expires), with their bounds", () => {
  const numeric = operations().flatMap(({ method, path, op }) =>
    (op.parameters ?? [])
      .filter((p: any) => p.in === "query" && ["limit", "after", "expires", "offset", "page", "seq"].includes(p.name))
      .map((p: any) => ({ at: `${method} ${path} ${p.name}`, schema: p.schema })),
  );
  expect(numeric.length).toBeGreaterThanOrEqual(6);
  expect(numeric.filter((p) => p.schema.type !== "integer").map((p) => p.at)).toEqual([]);
  const limit = doc.paths["/api/public/v1/videos/"].get.parameters.find((p: any) => p.name === "limit").schema;
  expect(limit).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 20 });
});

test("openapi-typescript: operations named by their ids, limit a number, WHIP/WHEP typed", () => {
  const dir = mkdtempSync(join(tmpdir(), "openapi-gen-"));
  try {
    writeFileSync(join(dir, "openapi.json"), JSON.stringify(doc));
    const run = Bun.spawnSync([join(ROOT, "node_modules/.bin/openapi-typescript"), join(dir, "openapi.json"), "--output", join(dir, "schema.d.ts")], { stdout: "pipe", stderr: "pipe" });
    expect(run.exitCode).toBe(0);
    const types = readFileSync(join(dir, "schema.d.ts"), "utf8");
    const operationsBlock = types.slice(types.indexOf("export interface operations {"));
    for (const name of ["createVideo", "listVideos", "getVideo", "listLivestreams", "createLivestream", "endLivestream", "createWebhook", "createWhipSession", "createWhepSession"])
      expect(operationsBlock).toContain(`\n    ${name}: {`);
    expect(types).not.toMatch(/postApiPublicV1|getApiPublicV1/);
    const listVideos = operationsBlock.slice(operationsBlock.indexOf("\n    listVideos: {"), operationsBlock.indexOf("\n    createUploadUrl: {"));
    expect(listVideos).toMatch(/limit\?: number;/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

test("the WHIP and WHEP routes are documented: SDP in, SDP and Location out, their refusals in the envelope", () => {
  for (const kind of ["whip", "whep"]) {
    const post = doc.paths[`/live/{token}/${kind}`]?.post;
    expect(post, `POST /live/{token}/${kind}`).toBeDefined();
    expect(post.security).toEqual([]);
    expect(Object.keys(post.requestBody.content)).toEqual(["application/sdp"]);
    expect(Object.keys(post.responses["201"].content)).toEqual(["application/sdp"]);
    expect(post.responses["201"].headers.Location).toBeDefined();
    // WHEP also takes a signed stream's playback JWT as ?token= (issue 27).
    expect(post.parameters.map((p: any) => `${p.in}:${p.name}`)).toEqual(kind === "whip" ? ["path:token"] : ["path:token", "query:token"]);
    const codes = Object.values(post.responses as Record<string, any>).flatMap((r) => r.content?.["application/json"]?.schema?.properties?.error?.properties?.code?.enum ?? []);
    expect(codes).toEqual(expect.arrayContaining(kind === "whip" ? ["INVALID_STREAM_KEY", "STREAM_NOT_ACCEPTING"] : ["STREAM_NOT_LIVE", "VIEWER_LIMIT_REACHED", "PERMISSION_DENIED"]));
    expect(doc.paths[`/live/{token}/${kind}/{session}`]?.delete?.responses["404"]).toBeDefined();
  }
}, 60_000);

/** `#/components/schemas/X` inlined, so each schema compiles on its own. */
function inline(schema: any): any {
  if (Array.isArray(schema)) return schema.map(inline);
  if (typeof schema !== "object" || schema === null) return schema;
  if (typeof schema.$ref === "string") return inline(doc.components.schemas[schema.$ref.split("/").pop()]);
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inline(v)]));
}

/** Every example of the document with the schema it illustrates: media types' `example`, schemas' `examples`. */
function examples(node: any, at: string, out: { at: string; schema: any; value: unknown }[]) {
  if (typeof node !== "object" || node === null) return out;
  if (node.schema && "example" in node) out.push({ at: `${at}.example`, schema: node.schema, value: node.example });
  if (Array.isArray(node.examples) && (node.type || node.anyOf || node.enum)) {
    const { examples: list, ...schema } = node;
    for (const [i, value] of list.entries()) out.push({ at: `${at}.examples[${i}]`, schema, value });
  }
  for (const [k, v] of Object.entries(node)) examples(v, `${at}.${k}`, out);
  return out;
}

test("every example is valid for its schema, and each webhook's example is a delivery of that event", () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const found = examples(doc, "$", []);
  expect(found.length).toBeGreaterThan(EVENT_NAMES.length);
  const invalid = found.flatMap(({ at, schema, value }) => {
    const validate = ajv.compile(inline(schema));
    return validate(value) ? [] : [`${at}: ${ajv.errorsText(validate.errors)}`];
  });
  expect(invalid).toEqual([]);

  // What each event's own payload says of its subject (the machines' states at that event).
  const status: Record<string, string[]> = {
    VIDEO_UPLOADED: ["TRANSCODING"],
    VIDEO_TRANSCODING_STARTED: ["TRANSCODING"],
    VIDEO_PLAYABLE: ["TRANSCODING"],
    VIDEO_TRANSCODING_COMPLETED: ["COMPLETED"],
    VIDEO_TRANSCODING_FAILED: ["ERROR"],
    LIVESTREAM_SCHEDULED: ["SCHEDULED", "READY_TO_STREAM"],
    LIVESTREAM_STARTED: ["LIVE"],
    LIVESTREAM_ENDED: ["ENDED"],
    LIVESTREAM_RECORDING_READY: ["ENDED"],
    // A simulcast output's events (issue 26) speak of the output: active, or reconnecting / failed.
    LIVESTREAM_OUTPUT_ACTIVE: ["active"],
    LIVESTREAM_OUTPUT_FAILED: ["reconnecting", "failed"],
  };
  for (const event of EVENT_NAMES) {
    const example = doc.webhooks[event].post.requestBody.content["application/json"].example;
    expect(example?.event, event).toBe(event);
    expect(status[event], event).toContain(example.data.video?.status ?? example.data.stream?.status ?? example.data.output?.status);
  }
  const completed = doc.webhooks.VIDEO_TRANSCODING_COMPLETED.post.requestBody.content["application/json"].example.data;
  expect(completed.renditions.length).toBeGreaterThan(0);
  expect(doc.webhooks.VIDEO_TRANSCODING_FAILED.post.requestBody.content["application/json"].example.data.error.code).toBeString();
}, 60_000);
