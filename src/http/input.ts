import { t, type TSchema } from "elysia";
import { TypeRegistry } from "elysia/type-system";
import { InvalidInput } from "../errors.ts";
import { ApiError } from "./api-error.ts";

/**
 * Strict input validation for request bodies and query strings, one pass per
 * request so every failing field is reported at once (spec 7.2: `details` maps
 * field name → message):
 *
 * - a field the route does not know is refused, by name;
 * - `null` on an optional field means "not given" (its default, or null);
 * - every structure built from client keys is a null-prototype object, so a
 *   key such as `__proto__` is only ever an own property, never a setter call.
 *
 * Each field carries a TypeBox schema used only for the OpenAPI document; the
 * checks are the functions below, so the document and the rules stay side by side.
 */

export type Checked<T> = { ok: true; value: T } | { ok: false; error: string };
const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const bad = (error: string): Checked<never> => ({ ok: false, error });

export interface Field<T> {
  schema: TSchema;
  optional: boolean;
  check(value: unknown): Checked<T>;
}

type FieldMap = Record<string, Field<any>>;
type Output<F extends FieldMap> = {
  [K in keyof F]: F[K] extends Field<infer T> ? (F[K]["optional"] extends true ? T | undefined : T) : never;
};

/** Characters as a reader counts them (code points), not UTF-16 units. */
export const charLength = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

export function field<T>(schema: TSchema, check: (value: unknown) => Checked<T>): Field<T> & { optional: false } {
  return { schema, optional: false, check };
}

/** Optional, and `null` is accepted as "not given". */
export function optional<T>(f: Field<T>): Field<T> & { optional: true } {
  return { schema: t.Optional(t.Union([f.schema, t.Null()], { description: f.schema.description })), optional: true, check: f.check };
}

export function string(opts: { min?: number; max: number; description?: string; error?: string; examples?: unknown[] }): Field<string> & { optional: false } {
  const min = opts.min ?? 0;
  const error = opts.error ?? (min > 0 ? `must be a string of ${min} to ${opts.max} characters` : `must be a string of at most ${opts.max} characters`);
  return field(t.String({ minLength: min, maxLength: opts.max, description: opts.description, examples: opts.examples }), (v) => {
    if (typeof v !== "string") return bad(error);
    const n = charLength(v);
    return n < min || n > opts.max ? bad(error) : ok(v);
  });
}

export function boolean(description?: string): Field<boolean> & { optional: false } {
  return field(t.Boolean({ description }), (v) => (typeof v === "boolean" ? ok(v) : bad("must be a boolean")));
}

export function integer(opts: { min: number; max?: number; description?: string; error: string }): Field<number> & { optional: false } {
  return field(t.Integer({ minimum: opts.min, maximum: opts.max, description: opts.description }), (v) =>
    typeof v === "number" && Number.isSafeInteger(v) && v >= opts.min && (opts.max === undefined || v <= opts.max) ? ok(v) : bad(opts.error),
  );
}

export function oneOf<const V extends string>(values: readonly V[], description?: string): Field<V> & { optional: false } {
  const error = `must be one of: ${values.join(", ")}`;
  return field(
    t.Union(
      values.map((v) => t.Literal(v)),
      { description },
    ),
    (v) => (typeof v === "string" && (values as readonly string[]).includes(v) ? ok(v as V) : bad(error)),
  );
}

// ---- tags: one rule for videos and live streams --------------------------------

export const TAGS_MAX_KEYS = 50;
export const TAG_KEY_MAX = 64;
export const TAG_VALUE_MAX = 256;
export type Tags = Record<string, string | number | boolean | null>;

const TAGS_RULE = `a flat JSON object of at most ${TAGS_MAX_KEYS} keys (1 to ${TAG_KEY_MAX} characters, not __proto__) whose values are strings of at most ${TAG_VALUE_MAX} characters, numbers, booleans or null`;

/**
 * `tags` must be a flat object; the copy returned is a null-prototype object
 * built with own-property definitions, so no client key can reach a prototype.
 * `__proto__` is refused outright: it is never a meaningful tag, and a later
 * reader that copies tags into an ordinary object would call its setter.
 */
export function checkTags(v: unknown): Checked<Tags> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return bad(`must be ${TAGS_RULE}`);
  const keys = Object.keys(v);
  if (keys.length > TAGS_MAX_KEYS) return bad(`must have at most ${TAGS_MAX_KEYS} keys (got ${keys.length})`);
  const out: Tags = Object.create(null);
  for (const key of keys) {
    const n = charLength(key);
    if (n < 1 || n > TAG_KEY_MAX) return bad(`keys must be 1 to ${TAG_KEY_MAX} characters`);
    if (key === "__proto__") return bad("must not use the key __proto__");
    const value = (v as Record<string, unknown>)[key];
    if (typeof value === "string") {
      if (charLength(value) > TAG_VALUE_MAX) return bad(`values must be at most ${TAG_VALUE_MAX} characters (key ${JSON.stringify(key.slice(0, 64))})`);
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) return bad(`values must be finite numbers (key ${JSON.stringify(key)})`);
    } else if (typeof value !== "boolean" && value !== null) {
      return bad(`values must be strings, numbers, booleans or null, not nested objects or arrays (key ${JSON.stringify(key)})`);
    }
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return ok(out);
}

export const tagsField = (description = "Free-form labels kept with the resource and returned as given.") =>
  field(
    t.Record(t.String({ minLength: 1, maxLength: TAG_KEY_MAX }), t.Union([t.String({ maxLength: TAG_VALUE_MAX }), t.Number(), t.Boolean(), t.Null()]), {
      maxProperties: TAGS_MAX_KEYS,
      description: `${description} Must be ${TAGS_RULE}.`,
      examples: [{ team: "growth", episode: 12, public: true }],
    }),
    checkTags,
  );

// ---- whole inputs ---------------------------------------------------------------

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function fail(details: Record<string, string>): never {
  throw ApiError.validation(details);
}

export interface BodyInput<F extends FieldMap> {
  fields: F;
  /** The TypeBox object for the OpenAPI document. */
  schema: TSchema;
  /** Validates a parsed JSON body (absent or null reads as `{}`); throws 422 with every failing field. */
  parse(body: unknown): Output<F>;
}

export function bodyInput<F extends FieldMap>(fields: F, opts: { description?: string } = {}): BodyInput<F> {
  const schema = t.Object(Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, f.schema])), { additionalProperties: false, description: opts.description });
  return {
    fields,
    schema,
    parse(body) {
      if (body === undefined || body === null) body = {};
      if (!isPlainObject(body)) fail({ body: "must be a JSON object" });
      const details: Record<string, string> = Object.create(null);
      for (const key of Object.keys(body)) if (!Object.hasOwn(fields, key)) details[key] = "is not a known field";
      // Null prototype: a field left out reads as undefined even if something ever polluted Object.prototype.
      const out: Record<string, unknown> = Object.create(null);
      for (const [key, f] of Object.entries(fields)) {
        const v = Object.hasOwn(body, key) ? body[key] : undefined;
        if (v === undefined || v === null) {
          if (!f.optional) details[key] = "is required";
          continue;
        }
        const r = f.check(v);
        if (r.ok) out[key] = r.value;
        else details[key] = r.error;
      }
      if (Object.keys(details).length > 0) fail({ ...details });
      return out as Output<F>;
    },
  };
}

/** Merges the details of several checks of one request, so all failing fields are reported together. */
export function collectDetails(...steps: Array<() => unknown>): Record<string, string> {
  const details: Record<string, string> = Object.create(null);
  for (const step of steps) {
    try {
      step();
    } catch (err) {
      // A domain check (InvalidInput) merges like an HTTP one.
      const fields =
        err instanceof InvalidInput ? err.fields : err instanceof ApiError && err.code === "VALIDATION_ERROR" && typeof err.details === "object" && err.details !== null ? err.details : null;
      if (!fields) throw err;
      for (const [k, v] of Object.entries(fields as Record<string, string>)) if (!(k in details)) details[k] = v;
    }
  }
  return details;
}

/** The fields of a body that a route does not know (for routes validated elsewhere). */
export function unknownFields(body: unknown, known: readonly string[]): Record<string, string> {
  const details: Record<string, string> = Object.create(null);
  if (body === undefined || body === null) return details;
  if (!isPlainObject(body)) {
    details.body = "must be a JSON object";
    return details;
  }
  for (const key of Object.keys(body)) if (!known.includes(key)) details[key] = "is not a known field";
  return details;
}

/** A route that takes no body: nothing, `{}` or `null`. */
export const emptyBody = bodyInput({});

// ---- query strings ----------------------------------------------------------------

export interface QueryField<T> {
  /**
   * Documentation only, given to Elysia as the route's `query` schema: keep it a
   * plain string without constraints Elysia would enforce (pattern, lengths), so
   * check() is the one judge and its messages are the ones clients see.
   */
  schema: TSchema;
  check(value: string): Checked<T>;
}

type QueryOutput<F extends Record<string, QueryField<any>>> = { [K in keyof F]: F[K] extends QueryField<infer T> ? T | undefined : never };

export interface QueryInput<F extends Record<string, QueryField<any>>> {
  /** For the OpenAPI document (every parameter optional). */
  schema: TSchema;
  /** Validates the raw query of a request URL: unknown or repeated parameters are refused by name. */
  parse(url: string): QueryOutput<F>;
}

const NO_QUERY: Readonly<Record<string, never>> = Object.freeze(Object.create(null));

export function queryInput<F extends Record<string, QueryField<any>>>(fields: F): QueryInput<F> {
  const schema = t.Object(Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, t.Optional(f.schema)])), { additionalProperties: true });
  return {
    schema,
    parse(url) {
      const q = url.indexOf("?");
      // No query string (most list reads): nothing to check, and no per-request objects.
      if (q < 0) return NO_QUERY as QueryOutput<F>;
      const details: Record<string, string> = Object.create(null);
      const raw = new Map<string, string>();
      if (q >= 0) {
        const hash = url.indexOf("#", q);
        for (const [key, value] of new URLSearchParams(hash < 0 ? url.slice(q + 1) : url.slice(q + 1, hash))) {
          if (!Object.hasOwn(fields, key)) details[key] = "is not a known query parameter";
          else if (raw.has(key)) details[key] = "must be given once";
          else raw.set(key, value);
        }
      }
      const out: Record<string, unknown> = Object.create(null);
      for (const [key, value] of raw) {
        if (key in details) continue;
        const r = fields[key]!.check(value);
        if (r.ok) out[key] = r.value;
        else details[key] = r.error;
      }
      if (Object.keys(details).length > 0) fail({ ...details });
      return out as QueryOutput<F>;
    },
  };
}

/** TypeBox's kind marker (a global symbol); a kind of our own is how a schema documents one type and lets Elysia pass another. */
const KIND = Symbol.for("TypeBox.Kind");
const QUERY_INTEGER = "QueryInteger";
// Elysia validates a route's `query` schema before the handler: this kind lets any raw value through, so the field's
// `check` stays the one judge (and its 422 names the field as every other refusal does).
if (!TypeRegistry.Has(QUERY_INTEGER)) TypeRegistry.Set(QUERY_INTEGER, () => true);

/**
 * The schema of a query parameter that carries an integer: the document says
 * `type: integer` (so generated clients take a number: openapi-typescript,
 * @hey-api/openapi-ts), while the request's raw string goes to the field's
 * own `check`. `t.Integer`/`t.Numeric` would make Elysia coerce and refuse
 * it first with its own message, and would document a string/integer union.
 */
export function queryInteger(opts: { description: string; minimum?: number; maximum?: number; default?: number }) {
  return t.Unsafe<string>({ [KIND]: QUERY_INTEGER, type: "integer", ...opts });
}

export const limitParam: QueryField<string> = {
  schema: queryInteger({ description: "How many items: 1-100, default 20.", minimum: 1, maximum: 100, default: 20 }),
  check: (v) => (/^[0-9]{1,3}$/.test(v) && Number(v) >= 1 && Number(v) <= 100 ? ok(v) : bad("must be an integer from 1 to 100")),
};

export const cursorParam: QueryField<string> = {
  schema: t.String({ description: "`next_cursor` of the previous page" }),
  check: (v) => (v.length >= 1 && v.length <= 200 ? ok(v) : bad("must be a cursor from a previous page")),
};

/** `?status=A` or `?status=A,B`: each value from `values`. */
export function enumListParam<const V extends string>(values: readonly V[], what: string): QueryField<V[]> {
  const error = `must be one or more of ${values.join(", ")}, separated by commas`;
  return {
    schema: t.String({ description: `Only ${what} with this status; several separated by commas. One of: ${values.join(", ")}.`, examples: [values[0]] }),
    check(v) {
      const list = v.split(",");
      if (list.length === 0 || list.length > values.length) return bad(error);
      for (const s of list) if (!(values as readonly string[]).includes(s)) return bad(error);
      return ok([...new Set(list)] as V[]);
    },
  };
}

export function enumParam<const V extends string>(values: readonly V[], description: string): QueryField<V> {
  const error = `must be one of: ${values.join(", ")}`;
  return {
    // `enum` documents the values; TypeBox does not enforce it on strings, so check() stays the only judge.
    schema: t.String({ enum: [...values], description }),
    check: (v) => ((values as readonly string[]).includes(v) ? ok(v as V) : bad(error)),
  };
}

export const pageParams = { limit: limitParam, cursor: cursorParam };

/** Lists that only page (`limit`, `cursor`). */
export const pageQuery = queryInput(pageParams);

/**
 * For a body validated by its own domain function (which reports every field it
 * knows at once): refuses unknown fields too, and reports both in one 422.
 */
export function strictBody<T>(body: unknown, known: readonly string[], parse: (body: unknown) => T): T {
  const details = unknownFields(body, known);
  if ("body" in details) fail({ ...details });
  let out: T | undefined;
  const more = collectDetails(() => {
    out = parse(body);
  });
  for (const [k, v] of Object.entries(more)) if (!(k in details)) details[k] = v;
  if (Object.keys(details).length > 0) fail({ ...details });
  return out as T;
}
