import { ApiError } from "./api-error.ts";
import { errorResponse, nowIso } from "./envelope.ts";

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
  return errorResponse(NOT_FOUND);
}

/**
 * The bytes Elysia answers for `success(data)` (src/http/envelope.ts), with the
 * data already serialized: `{"success":true,"message":…,"data":…,"meta":{"timestamp":…}}`.
 */
export function okJson(dataJson: string, message = "OK"): Response {
  return new Response(`{"success":true,"message":${JSON.stringify(message)},"data":${dataJson},"meta":{"timestamp":"${nowIso()}"}}`, { headers: JSON_TYPE });
}

/** A page's `data` (`{items, next_cursor}`, as `paginate` answers it) from serialized items. */
export function pageJson(items: string[], nextCursor: string | null): string {
  return `{"items":[${items.join(",")}],"next_cursor":${nextCursor === null ? "null" : JSON.stringify(nextCursor)}}`;
}
