import fc from "fast-check";
import { EVENT_NAMES } from "../../src/webhooks/event-names.ts";

/**
 * JSON as text, built by hand so hostile keys (`__proto__`, `constructor`,
 * duplicates) reach the server exactly as written, whatever the test process's
 * own object semantics would do with them.
 */
export type J = null | boolean | number | string | J[] | { entries: Array<[string, J]> };

export function ser(v: J): string {
  if (Array.isArray(v)) return "[" + v.map(ser).join(",") + "]";
  if (v !== null && typeof v === "object") return "{" + v.entries.map(([k, x]) => JSON.stringify(k) + ":" + ser(x)).join(",") + "}";
  return JSON.stringify(v) ?? "null"; // NaN and Infinity serialise as null, as in JSON.stringify
}

export const HOSTILE_KEYS = ["__proto__", "constructor", "prototype", "constructor.prototype.cursor", "__proto__.x", "toString", "hasOwnProperty", ""];

const huge = fc.constantFrom("x".repeat(300), "y".repeat(5_000), "z".repeat(100_000));
export const scalar: fc.Arbitrary<J> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom("", "NORMAL", "LOW", "VIDEO_UPLOADED", "2030-01-01T00:00:00Z", "2099-02-30T10:00:00Z", "%E0%A4%A", "http://127.0.0.1:9/a.mp4", "https://127.0.0.1:9/hook", "__proto__"),
  huge,
);

export const anyKey = fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...HOSTILE_KEYS) }, { weight: 3, arbitrary: fc.string({ maxLength: 12 }) });

export const anyJson: fc.Arbitrary<J> = fc.letrec<{ v: J }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalar,
    fc.array(tie("v"), { maxLength: 4 }),
    fc.array(fc.tuple(anyKey, tie("v")), { maxLength: 4 }).map((entries) => ({ entries })),
  ),
})).v;

const obj = (entries: Array<[string, J]>): J => ({ entries });

/** Values that pass each field's rule, so a good share of generated bodies is valid. */
export const good: Record<string, fc.Arbitrary<J>> = {
  source_url: fc.string({ maxLength: 20 }).map((p) => `http://127.0.0.1:9/${encodeURIComponent(p)}.mp4`),
  title: fc.string({ minLength: 1, maxLength: 200 }).filter((s) => [...s].length >= 1 && [...s].length <= 200),
  drm_enabled: fc.constantFrom(false, null),
  subtitles: fc.oneof(fc.boolean(), fc.constant(null)),
  tags: fc.oneof(
    fc.constant(null),
    fc
      .uniqueArray(
        fc.tuple(
          fc.string({ minLength: 1, maxLength: 20 }).filter((k) => k !== "__proto__"),
          fc.oneof(fc.string({ maxLength: 50 }), fc.integer(), fc.boolean(), fc.constant(null)),
        ),
        { maxLength: 6, selector: ([k]) => k },
      )
      .map(obj),
  ),
  latency: fc.constantFrom("NORMAL", "LOW", null),
  scheduled_at: fc.integer({ min: 120_000, max: 300 * 86_400_000 }).map((ms) => new Date(Date.now() + ms).toISOString()),
  filename: fc.oneof(fc.string({ maxLength: 100 }), fc.constant(null)),
  size_bytes: fc.oneof(fc.integer({ min: 1, max: 1_000_000_000 }), fc.constant(null)),
  url: fc.constantFrom("https://127.0.0.1:9/hook", "https://localhost:9/h"),
  events: fc.subarray([...EVENT_NAMES], { minLength: 1 }),
  fields: fc.oneof(fc.constant(null), fc.subarray(["video.id", "video.status", "stream.id", "renditions.quality"])),
  description: fc.oneof(fc.string({ maxLength: 100 }), fc.constant(null)),
  event: fc.constantFrom(...EVENT_NAMES),
};

/**
 * A request body as raw text (or none): mostly objects mixing the route's
 * fields (good or arbitrary values) with hostile and random keys; sometimes
 * non-objects, malformed text, deep nesting, or more than the 1 MiB cap.
 */
export function bodyFor(fields: string[]): fc.Arbitrary<string | undefined> {
  const known = fields.length ? fc.constantFrom(...fields) : fc.constantFrom("x");
  const entry = fc.oneof(
    { weight: 6, arbitrary: known.chain((k) => fc.tuple(fc.constant(k), fields.includes(k) ? fc.oneof({ weight: 3, arbitrary: good[k]! }, { weight: 2, arbitrary: anyJson }) : anyJson)) },
    { weight: 1, arbitrary: fc.tuple(anyKey, anyJson) },
  );
  const objectBody = fc.array(entry, { maxLength: fields.length + 2 }).map((entries) => ser({ entries }));
  const complete = fc.record(Object.fromEntries(fields.map((f) => [f, good[f]!])) as Record<string, fc.Arbitrary<J>>).map((r) => ser({ entries: Object.entries(r) as Array<[string, J]> }));
  return fc.oneof(
    { weight: 8, arbitrary: objectBody },
    { weight: 3, arbitrary: complete },
    { weight: 1, arbitrary: anyJson.map(ser) },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        "{",
        "[",
        "null",
        '{"a":',
        "{}",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "[".repeat(50_000),
        `{"__proto__":{"polluted":1}}`,
        `{"constructor":{"prototype":{"polluted":1}}}`,
      ),
    },
    { weight: 1, arbitrary: fc.constant(`{"title":"${"x".repeat(1024 * 1024 + 16)}"}`) },
  );
}

const QUERY_KEYS = ["limit", "cursor", "status", "kind", "__proto__", "constructor", "x", "limit[]", "", "__proto__[x]"];
const QUERY_VALUES = ["1", "20", "100", "0", "101", "-1", "abc", "TRANSCODING", "COMPLETED,ERROR", "LIVE", "SCHEDULED,ENDED", "UPLOAD", "LIVESTREAM_RECORDING", "%E0%A4%A", "", "MTIzOnZpZF94"];

/** A raw query string: known and hostile keys, encoded or raw values (malformed percent-encoding included). */
export const queryString = fc
  .array(
    fc.tuple(
      fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...QUERY_KEYS) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }).map(encodeURIComponent) }),
      fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...QUERY_VALUES) }, { weight: 1, arbitrary: fc.string({ maxLength: 30 }).map(encodeURIComponent) }),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join("&"));

/** Parsed query keys as the server sees them (URLSearchParams semantics). */
export function queryKeys(q: string): string[] {
  return [...new URLSearchParams(q).keys()];
}

/** A path segment: real ids, hostile tokens (malformed percent-encoding, dots, slashes), random text. */
export function idFor(real: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...real) },
    { weight: 2, arbitrary: fc.constantFrom("%E0%A4%A", "%", "%00", "..", ".", "%2e%2e", "%2F", "a%2Fb", "vid_", "ls_", "whk_", "x".repeat(65), "x".repeat(5000), "%C0%AF", "%FF") },
    { weight: 2, arbitrary: fc.string({ maxLength: 30 }).map(encodeURIComponent) },
  );
}
