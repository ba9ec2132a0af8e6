import { type Static, t, type TSchema } from "elysia";

type TProperties = Parameters<typeof t.Object>[0];
import { ERROR_STATUS, type ErrorCode } from "./api-error.ts";
import { DEFAULT_ERROR_HEADERS } from "./envelope.ts";

/**
 * True only when A and B are the same type. The response schemas assert it
 * against the builders' return types (`const _x: Equals<Static<typeof S>,
 * ReturnType<typeof builder>> = true`), so a field added to a builder but not
 * to its schema (or the reverse) fails `tsc`: the document cannot drift from
 * the code that builds the bodies.
 */
export type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** A JSON object with exactly these properties: the document says no others appear. */
export const strictObject = <P extends TProperties>(properties: P, opts: { description?: string } = {}) => t.Object(properties, { additionalProperties: false, ...opts });

/** `type | null`, as JSON Schema 2020-12 `anyOf` (OpenAPI 3.1 has no `nullable`). */
export const nullable = <S extends TSchema>(schema: S, opts: { description?: string } = {}) => t.Union([schema, t.Null()], opts);

/**
 * An integer. Elysia's `t.Integer` is a coercing union (a string with the
 * non-standard format "integer", or an integer) meant for query strings; a
 * response field is a plain JSON integer.
 */
export const integer = (opts: { description?: string; minimum?: number; maximum?: number } = {}) => t.Unsafe<number>({ type: "integer", ...opts });

/** A JSON object of any keys whose values match `value` (`additionalProperties`, which every generator maps to a dictionary). */
export const recordOf = <V extends TSchema>(value: V, opts: { description?: string } = {}) => t.Unsafe<Record<string, Static<V>>>({ type: "object", additionalProperties: jsonSchema(value), ...opts });

/** ISO 8601 UTC timestamp with milliseconds, as every body writes them. */
export const isoTime = (description?: string) => t.String({ format: "date-time", ...(description ? { description } : {}) });

/** `{id, deleted: true}`: the answer of every DELETE. */
export const DeletedSchema = strictObject({ id: t.String(), deleted: t.Literal(true) });

/** A page of a list: `items` newest first and the opaque cursor of the next page (null on the last). */
export const pageOf = <S extends TSchema>(item: S) =>
  strictObject({ items: t.Array(item), next_cursor: nullable(t.String(), { description: "Pass as `cursor` for the next page; null on the last." }) });

const NAME = Symbol("openapi.component");
const COMPONENTS = new Map<string, Record<string, unknown>>();

/**
 * Names a schema: the document holds it once, under `components.schemas.<name>`,
 * and every use refers to it (`$ref`), so generated clients get a named type
 * (`components["schemas"]["Video"]`). Marks the object itself: call it once,
 * after the schema is built (uses built earlier see the mark too: TypeBox
 * does not copy the schemas it composes).
 */
export function named<S extends TSchema>(name: string, schema: S): S {
  (schema as unknown as Record<symbol, string>)[NAME] = name;
  return schema;
}

/** The named schemas met so far (`components.schemas`; complete once every route's `doc()` ran). */
export function componentSchemas(): Record<string, Record<string, unknown>> {
  return Object.fromEntries(COMPONENTS);
}

/**
 * A TypeBox schema as plain JSON Schema: TypeBox marks its schemas with symbol
 * keys (Kind, Optional) that JSON has no room for, named schemas become
 * `$ref`s, and Elysia's coercing number unions become plain JSON types, so the
 * document carries only standard keywords.
 */
export function jsonSchema(schema: TSchema): Record<string, unknown> {
  return toJson(schema);
}

function toJson(node: any): any {
  if (Array.isArray(node)) return node.map(toJson);
  if (typeof node !== "object" || node === null) return node;
  const plain = standardize(Object.fromEntries(Object.entries(node).map(([k, v]) => [k, toJson(v)])));
  const name = node[NAME] as string | undefined;
  if (!name) return plain;
  COMPONENTS.set(name, plain);
  return { $ref: `#/components/schemas/${name}` };
}

/** Elysia's coercing number types (`t.Integer`, `t.Numeric`): a string of format "integer"/"numeric" or a number. */
const COERCED = new Set(["integer", "numeric"]);

/** Replaces Elysia's coercing union (children already converted) by the plain JSON type a body carries. */
function standardize(out: Record<string, any>): Record<string, any> {
  const alts = out.anyOf as any[] | undefined;
  if (alts?.length === 2 && alts[0]?.type === "string" && COERCED.has(alts[0]?.format) && typeof alts[1]?.type === "string") {
    const { anyOf: _, ...rest } = out;
    return { ...alts[1], ...rest };
  }
  return out;
}

const META = {
  type: "object",
  required: ["timestamp"],
  additionalProperties: false,
  properties: { timestamp: { type: "string", format: "date-time", description: "ISO 8601 UTC with milliseconds." } },
};

/** Shared OpenAPI components: the generic error envelope (the DRM licence route refers to it). */
export const envelopeSchemas = {
  ErrorEnvelope: errorEnvelope(Object.keys(ERROR_STATUS) as ErrorCode[]),
} as const;

/** `{success: true, message, data, meta}` with the operation's own `data`. */
export function successEnvelope(data: TSchema) {
  return {
    type: "object",
    required: ["success", "message", "data", "meta"],
    additionalProperties: false,
    properties: {
      success: { type: "boolean", const: true },
      message: { type: "string", description: "Human-readable; may be reworded, never branch on it." },
      data: jsonSchema(data),
      meta: META,
    },
  };
}

/**
 * `{success: false, message, error: {code, details?}, meta}` limited to the
 * codes one status can carry. The 401 body has no `meta` (every key failure
 * gets the same bytes), so `meta` is not required.
 */
export function errorEnvelope(codes: readonly string[]) {
  return {
    type: "object",
    required: ["success", "message", "error"],
    additionalProperties: false,
    properties: {
      success: { type: "boolean", const: false },
      message: { type: "string" },
      error: {
        type: "object",
        required: ["code"],
        additionalProperties: false,
        properties: {
          code: { type: "string", enum: codes },
          details: { description: "PERMISSION_DENIED: the missing permission codenames. VALIDATION_ERROR: field name → message. PAYLOAD_TOO_LARGE: `body` → the limit." },
        },
      },
      meta: META,
    },
  };
}

const RETRY_AFTER: Partial<Record<ErrorCode, string>> = {
  RATE_LIMITED: "Seconds to wait.",
  NO_SLOTS_AVAILABLE: `Seconds to wait before retrying (${DEFAULT_ERROR_HEADERS.NO_SLOTS_AVAILABLE!["retry-after"]}).`,
  TRANSCODE_QUEUE_FAILED: `Seconds to wait before retrying (${DEFAULT_ERROR_HEADERS.TRANSCODE_QUEUE_FAILED!["retry-after"]}).`,
  SERVICE_UNAVAILABLE: `Seconds to wait before retrying (${DEFAULT_ERROR_HEADERS.SERVICE_UNAVAILABLE!["retry-after"]}).`,
};

/**
 * Every API route can answer these: no or a bad key, over the key's limit, a fault, a missing permission, and
 * VALIDATION_ERROR for a body that is not JSON or a body on a route that takes none, a dependency down.
 */
const COMMON: ErrorCode[] = ["INVALID_API_KEY", "PERMISSION_DENIED", "VALIDATION_ERROR", "RATE_LIMITED", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE"];

/** The responses of every code in `codes`, one per status (codes sharing a status share a schema). */
export function errorResponses(codes: ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const headers = list.filter((c) => RETRY_AFTER[c]).map((c) => RETRY_AFTER[c]);
    out[String(status)] = {
      description: list.join(", "),
      content: { "application/json": { schema: errorEnvelope(list) } },
      ...(headers.length > 0 ? { headers: { "Retry-After": { description: headers[0], schema: { type: "integer" } } } } : {}),
    };
  }
  return out;
}

/** `verbResource`: camelCase, a verb then the resource (src/http/README.md "Operation ids"). */
const OPERATION_ID = /^[a-z]+(?:[A-Z][a-z0-9]*)+$/;

/** An operation id, checked when the route is declared (uniqueness across the document: test/openapi-lint.test.ts). */
export function operationId(id: string): string {
  if (!OPERATION_ID.test(id)) throw new Error(`operationId "${id}" must be camelCase, a verb then the resource (src/http/README.md "Operation ids")`);
  return id;
}

export interface DocOptions {
  /**
   * The operation's name in generated clients (`createVideo`, `listLivestreams`):
   * a verb and the resource, camelCase, as src/http/README.md "Operation ids"
   * says. Required, so a new route cannot fall back to Elysia's path-derived
   * name (`postApiPublicV1Videos`).
   */
  operationId: string;
  tags: string[];
  summary: string;
  description: string;
  /** The success status (201 for a creation); `alsoOk` adds a 200 with the same body (an idempotent repeat). */
  ok?: 200 | 201;
  alsoOk?: string;
  /** The schema of the envelope's `data`: the one whose Static type the route's builder returns. Absent: a success without a JSON body (tus). */
  data?: TSchema;
  /** What `data` holds, in a sentence. */
  dataDescription?: string;
  /** The codes the route and the services it calls can answer, beyond COMMON. */
  errors?: ErrorCode[];
  body?: TSchema;
  bodyRequired?: boolean;
}

/**
 * `detail` for a route: summary, description, tags and every response it can
 * give, each in the envelope, so the document lists every status (and, per
 * status, every code) a client sees, and the exact shape of `data`.
 */
export function doc(opts: DocOptions) {
  const ok = opts.ok ?? 200;
  const success = { description: opts.dataDescription ?? "Success.", ...(opts.data ? { content: { "application/json": { schema: successEnvelope(opts.data) } } } : {}) };
  const responses: Record<string, unknown> = {
    [ok]: success,
    ...(opts.alsoOk ? { 200: { ...success, description: opts.alsoOk } } : {}),
    // A route with a body counts it while reading (src/http/bounded-body.ts): 413 past the limit. Without one, a body is 422.
    ...errorResponses([...COMMON, ...(opts.body ? (["PAYLOAD_TOO_LARGE"] as const) : []), ...(opts.errors ?? [])]),
  };
  // The OpenAPI response objects are plain JSON here; Elysia types them more narrowly than needed.
  return {
    operationId: operationId(opts.operationId),
    tags: opts.tags,
    summary: opts.summary,
    description: opts.description,
    responses: responses as any,
    ...(opts.body ? jsonRequestBody(opts.body, opts.bodyRequired ?? true) : {}),
  };
}

/**
 * The request body of an operation whose body is validated by src/http/input.ts
 * rather than by Elysia (so unknown fields and nulls follow the project's rules).
 */
export function jsonRequestBody(schema: TSchema, required = true) {
  return { requestBody: { required, content: { "application/json": { schema: jsonSchema(schema) } } } as any };
}
