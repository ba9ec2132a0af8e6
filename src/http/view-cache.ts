import { ApiError } from "./api-error.ts";
import { errorBody, JSON_HEADERS, nowIso } from "./envelope.ts";

/**
 * Serialized resources of list answers. A record object of the actor runtime
 * stands for one actor at one row version (its cache hands out the same
 * object until the row changes, src/actors/actor-runtime.ts), and it belongs
 * to one organization, so JSON kept per record object is never another
 * version's nor another organization's. `tag` is what else the view depends
 * on (e.g. a live stream's WebRTC viewer count): another tag, another render.
 */
export function createViewCache<R extends object>() {
  const cache = new WeakMap<R, { tag: unknown; json: string }>();
  return (record: R, tag: unknown, build: () => unknown): string => {
    const hit = cache.get(record);
    if (hit && hit.tag === tag) return hit.json;
    const json = JSON.stringify(build());
    cache.set(record, { tag, json });
    return json;
  };
}

/**
 * A whole page's `data` JSON per loaded rows object: the read cache
 * (src/db/read-cache.ts) hands out the same rows object for the same query
 * while the database is unchanged, and no other query's. `tag` is what else
 * the items depend on (e.g. the viewer counts of the page's streams).
 */
export function createPageCache() {
  const cache = new WeakMap<object, { tag: string; json: string }>();
  return (rows: object, tag: string, build: () => string): string => {
    const hit = cache.get(rows);
    if (hit && hit.tag === tag) return hit.json;
    const json = build();
    cache.set(rows, { tag, json });
    return json;
  };
}

const JSON_TYPE = { "content-type": "application/json;charset=utf-8" };
/** One instance, never thrown: a thrown error costs its stack trace and Elysia's error path on every 404 of a read. */
const NOT_FOUND = ApiError.notFound();

/** The 404 envelope of a missing (or another organization's) resource, answered by the route instead of thrown. */
export function notFoundResponse(): Response {
  const timestamp = nowIso();
  if (timestamp !== notFoundAt) {
    notFoundAt = timestamp;
    notFoundBody = JSON.stringify(errorBody(NOT_FOUND));
  }
  return new Response(notFoundBody, { status: NOT_FOUND.status, headers: JSON_HEADERS });
}
/** The 404 body of the current millisecond (`errorResponse`'s bytes), built once per millisecond. */
let notFoundAt = "";
let notFoundBody = "";

const envelopeOf = (dataJson: string, message: string, timestamp: string) => `{"success":true,"message":${JSON.stringify(message)},"data":${dataJson},"meta":{"timestamp":"${timestamp}"}}`;

/**
 * The bytes Elysia answers for `success(data)` (src/http/envelope.ts), with the
 * data already serialized: `{"success":true,"message":…,"data":…,"meta":{"timestamp":…}}`.
 */
export function okJson(dataJson: string, message = "OK"): Response {
  const timestamp = nowIso();
  // A small body costs less to build than to look up (the key is hashed when it is a new string).
  if (dataJson.length < MEMO_FROM) return new Response(envelopeOf(dataJson, message, timestamp), { headers: JSON_TYPE });
  if (timestamp !== bodiesAt) {
    bodies.clear();
    bodiesAt = timestamp;
  }
  const key = message === "OK" ? dataJson : `${message}\n${dataJson}`;
  let body = bodies.get(key);
  if (body === undefined) {
    body = envelopeOf(dataJson, message, timestamp);
    if (bodies.size < MAX_BODIES) bodies.set(key, body);
  }
  return new Response(body, { headers: JSON_TYPE });
}

/**
 * Whole bodies of the current millisecond (their only varying part is
 * `meta.timestamp`, at millisecond precision), by their data's JSON. A page of
 * 100 items is ~60 KB: building the body string anew for every request
 * allocated that much per request, and the collector's work on it was the
 * larger part of a list read's CPU (bench/api.ts profile). Under load, the
 * requests of one millisecond answering the same cached page share one body.
 * The data JSON strings are the view caches' own objects, so the Map hashes
 * each once (the hash is kept on the string).
 */
const bodies = new Map<string, string>();
let bodiesAt = "";
const MAX_BODIES = 64;
const MEMO_FROM = 1024;

/** A page's `data` (`{items, next_cursor}`, as `paginate` answers it) from serialized items. */
export function pageJson(items: string[], nextCursor: string | null): string {
  return `{"items":[${items.join(",")}],"next_cursor":${nextCursor === null ? "null" : JSON.stringify(nextCursor)}}`;
}
