/**
 * The OpenAPI document, as GET /openapi/json serves it, passes Redocly's
 * recommended rules (redocly.yaml: the same, with the contract's trailing
 * slashes a warning) with 0 errors, uses only standard keywords, names its
 * server (BASE_URL), documents every event as a 3.1 webhook, and gives every
 * API operation a typed success body and its error codes.
 * Before issue 16 the same lint reported 15 errors (14 trailing slashes, empty `servers`).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EVENT_NAMES } from "../src/webhooks/event-names.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

const ROOT = join(import.meta.dir, "..");
let t: TestService;
let doc: any;
const dir = mkdtempSync(join(tmpdir(), "openapi-lint-"));
const file = join(dir, "openapi.json");

beforeAll(async () => {
  t = await startTestService({ env: { BASE_URL: "" } });
  doc = await (await fetch(`${t.base}/openapi/json`)).json();
  writeFileSync(file, JSON.stringify(doc, null, 2));
}, 120_000);
afterAll(async () => {
  await t?.stop({ cleanup: true });
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

test("redocly lint with the recommended rules: exit 0, 0 errors", () => {
  const run = Bun.spawnSync([join(ROOT, "node_modules/.bin/redocly"), "lint", "--extends", "recommended", "--config", join(ROOT, "redocly.yaml"), "--format", "summary", file], {
    cwd: dir,
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
  });
  const out = `${run.stdout.toString()}${run.stderr.toString()}`;
  const errors = [...out.matchAll(/^error\s+(\S+): (\d+)/gm)].map((m) => `${m[1]}: ${m[2]}`);
  expect(errors).toEqual([]);
  expect(out).toContain("Your API description is valid");
  expect(run.exitCode).toBe(0);
}, 60_000);

/** JSON Schema 2020-12 and OpenAPI 3.1 schema keywords: anything else is an extension a generator may choke on. */
const SCHEMA_KEYWORDS = new Set(
  (
    "$ref $id $schema $defs $comment type enum const properties required additionalProperties patternProperties propertyNames items prefixItems " +
    "anyOf oneOf allOf not if then else minimum maximum exclusiveMinimum exclusiveMaximum multipleOf minLength maxLength pattern format " +
    "minItems maxItems uniqueItems contains minContains maxContains minProperties maxProperties dependentRequired dependentSchemas " +
    "unevaluatedProperties unevaluatedItems title description default examples example readOnly writeOnly deprecated discriminator xml externalDocs contentMediaType contentEncoding"
  ).split(" "),
);
/** JSON Schema 2020-12's defined formats (Elysia's `t.Integer` adds a "integer" format of its own). */
const FORMATS = new Set(
  "date-time date time duration email idn-email hostname idn-hostname ipv4 ipv6 uri uri-reference iri iri-reference uuid uri-template json-pointer relative-json-pointer regex int32 int64 float double password".split(
    " ",
  ),
);
const SUBSCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "dependentSchemas"]);
const SUBSCHEMAS = new Set(["items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems"]);
const SUBSCHEMA_LISTS = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);

function nonStandard(schema: any, at: string, out: string[]) {
  if (typeof schema !== "object" || schema === null) return;
  for (const [k, v] of Object.entries(schema)) {
    if (!SCHEMA_KEYWORDS.has(k)) out.push(`${at}.${k}`);
    if (k === "format" && !FORMATS.has(v as string)) out.push(`${at}.format: ${v}`);
    if (SUBSCHEMA_MAPS.has(k)) for (const [name, sub] of Object.entries(v as object)) nonStandard(sub, `${at}.${k}.${name}`, out);
    if (SUBSCHEMAS.has(k)) nonStandard(v, `${at}.${k}`, out);
    if (SUBSCHEMA_LISTS.has(k)) {
      for (const [i, sub] of (v as unknown[]).entries()) nonStandard(sub, `${at}.${k}[${i}]`, out);
    }
  }
}

/** Every schema object of the document: components, parameters, bodies, responses, headers. */
function everySchema(node: any, at: string, visit: (schema: any, at: string) => void) {
  if (typeof node !== "object" || node === null) return;
  for (const [k, v] of Object.entries(node)) {
    if (k === "schema") visit(v, `${at}.schema`);
    else if (k === "schemas" && at === "$.components") for (const [name, s] of Object.entries(v as object)) visit(s, `${at}.schemas.${name}`);
    else everySchema(v, `${at}.${k}`, visit);
  }
}

test("only standard keywords in every schema (TypeBox and Elysia extras stripped)", () => {
  const found: string[] = [];
  everySchema(doc, "$", (s, at) => nonStandard(s, at, found));
  expect(found).toEqual([]);
  expect(JSON.stringify(doc)).not.toMatch(/"x-|"~|"\[Kind\]"|"nullable"/);
});

test("servers is BASE_URL; webhooks documents every event with its body", () => {
  expect(doc.servers).toEqual([{ url: t.base, description: expect.any(String) }]);
  expect(Object.keys(doc.webhooks).sort()).toEqual([...EVENT_NAMES].sort());
  for (const event of EVENT_NAMES) {
    const schema = doc.webhooks[event].post.requestBody.content["application/json"].schema;
    expect(schema.properties.event.const).toBe(event);
    expect(schema.required).toEqual(["event", "created_at", "data"]);
  }
});

const resolve = (schema: any) => (schema?.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema);

test("every API operation documents its success body (typed `data`) and its error codes", () => {
  const ops = Object.entries(doc.paths as Record<string, Record<string, any>>)
    .filter(([path]) => path.startsWith("/api/public/v1/"))
    .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })));
  expect(ops.length).toBeGreaterThanOrEqual(17);
  const missing: string[] = [];
  for (const { name, op } of ops) {
    const codes = Object.values(op.responses as Record<string, any>).flatMap((r) => resolve(r.content?.["application/json"]?.schema)?.properties?.error?.properties?.code?.enum ?? []);
    for (const code of ["INVALID_API_KEY", "PERMISSION_DENIED", "RATE_LIMITED", "INTERNAL_ERROR"]) if (!codes.includes(code)) missing.push(`${name}: ${code}`);
    const ok = Object.entries(op.responses as Record<string, any>).find(([s]) => s.startsWith("2"));
    if (!ok) missing.push(`${name}: no 2xx`);
    const data = resolve(ok?.[1].content?.["application/json"]?.schema?.properties?.data);
    // The tus routes answer with headers only, the listen route with an event stream; every JSON answer has a typed `data`.
    if (ok?.[1].content?.["application/json"] && !(data?.properties || data?.anyOf)) missing.push(`${name}: untyped data`);
  }
  expect(missing).toEqual([]);
  // Every error response names its own codes: the generic envelope (every code) would make the check above vacuous.
  // The API's and the presigned upload's errors are all envelopes; /readyz and /metrics answer their own bodies.
  const enveloped = (path: string) => path.startsWith("/api/public/v1/") || path.startsWith("/uploads/");
  const generic = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, op]) =>
      Object.entries(op.responses as Record<string, any>)
        .filter(([status]) => Number(status) >= 400)
        .filter(([, r]) => {
          const schema = r.content?.["application/json"]?.schema;
          return schema?.$ref === "#/components/schemas/ErrorEnvelope" || (enveloped(path) && !schema?.properties?.error?.properties?.code?.enum?.length);
        })
        .map(([status]) => `${method.toUpperCase()} ${path} ${status}`),
    ),
  );
  expect(generic).toEqual([]);
  const register = doc.paths["/api/public/v1/videos/"].post.responses;
  expect(Object.keys(register).sort()).toEqual(["200", "201", "401", "403", "409", "413", "422", "429", "500", "502", "503"]);
  expect(register["409"].content["application/json"].schema.properties.error.properties.code.enum.sort()).toEqual(["DRM_NOT_AVAILABLE", "TRANSCODE_NOT_CONFIGURED"]);
  expect(register["201"].content["application/json"].schema.properties.data.properties.video.properties.thumbnail_url).toBeDefined();
});

test("the tus operations list their own codes per status, with the key's 429 and 500; the presigned PUT is documented", () => {
  const tus = doc.paths["/api/public/v1/videos/uploads/{id}"];
  const codesOf = (op: any) =>
    Object.fromEntries(Object.entries(op.responses as Record<string, any>).map(([s, r]) => [s, r.content?.["application/json"]?.schema?.properties?.error?.properties?.code?.enum ?? []]));
  const create = codesOf(doc.paths["/api/public/v1/videos/uploads/"].post);
  expect(create).toEqual({
    "201": [],
    "400": ["VALIDATION_ERROR"],
    "401": ["INVALID_API_KEY"],
    "403": ["PERMISSION_DENIED"],
    "404": ["NOT_FOUND"],
    "409": ["TRANSCODE_NOT_CONFIGURED"],
    "412": ["VALIDATION_ERROR"],
    "413": ["VALIDATION_ERROR"],
    "429": ["RATE_LIMITED"],
    "500": ["INTERNAL_ERROR"],
    "501": ["INTERNAL_ERROR"],
  });
  const onUpload = {
    "400": ["VALIDATION_ERROR"],
    "401": ["INVALID_API_KEY"],
    "403": ["PERMISSION_DENIED"],
    "404": ["NOT_FOUND"],
    "412": ["VALIDATION_ERROR"],
    "429": ["RATE_LIMITED"],
    "500": ["INTERNAL_ERROR"],
  };
  expect(codesOf(tus.head)).toEqual({ "200": [], ...onUpload });
  expect(codesOf(tus.delete)).toEqual({ "204": [], ...onUpload });
  expect(codesOf(tus.patch)).toEqual({ "204": [], ...onUpload, "403": ["PERMISSION_DENIED", "VALIDATION_ERROR"], "409": ["VALIDATION_ERROR"], "413": ["VALIDATION_ERROR"] });
  for (const op of [doc.paths["/api/public/v1/videos/uploads/"].post, tus.head, tus.patch, tus.delete]) expect(op.responses["429"].headers["Retry-After"]).toBeDefined();

  const put = doc.paths["/uploads/{id}"]?.put;
  expect(put).toBeDefined();
  expect(put.security).toEqual([]);
  expect(Object.keys(put.requestBody.content)).toEqual(["application/octet-stream"]);
  expect(put.parameters.map((p: any) => `${p.in}:${p.name}`).sort()).toEqual(["path:id", "query:expires", "query:sig"]);
  expect(codesOf(put)).toEqual({ "200": [], "403": ["PERMISSION_DENIED"], "404": ["NOT_FOUND"], "422": ["VALIDATION_ERROR"], "500": ["INTERNAL_ERROR"] });
  expect(Object.keys(put.responses["200"].content["application/json"].schema.properties.data.properties).sort()).toEqual(["size_bytes", "upload_id"]);
});
