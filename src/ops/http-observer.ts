import { authByRequest } from "../http/api-context.ts";
import { routedPath } from "../http/canonical-request.ts";
import { matchedRoute } from "../http/matched-route.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "./metrics.ts";
import { requestIdFrom } from "./request-id.ts";
import { createRouteTable } from "../http/route-table.ts";

/** Methods outside this set share one label: a client cannot mint label values. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
/** Probes and scrapes come every few seconds: their access lines go to debug, not info. */
const QUIET = new Set(["/healthz", "/readyz", "/metrics"]);

interface ObservedApp {
  handle: (request: Request) => Promise<Response>;
  readonly routes: ReadonlyArray<{ method: string; path: string }>;
}

/**
 * Wraps the app's `handle` (the one entry of every request: Bun.serve's fetch
 * and in-process tests alike) to give each request an id (`X-Request-Id` in
 * and out, on every response: errors, 401s and 404s too), count it in the
 * HTTP metrics by route template and status, and write one access log line.
 * The wrapper, not Elysia's onAfterResponse: that hook does not run for a
 * response returned by onRequest (401, 429) and reports a 404 as 200.
 *
 * Hot path: no await (one `.then`), a Map lookup for the metric series, one
 * small object for the log line (none when its level is off); the route table is consulted only for
 * requests answered before routing.
 */
export function observeRequests(app: ObservedApp, opts: { metrics: Metrics; logger: Logger }): void {
  const { metrics, logger } = opts;
  const inner = app.handle;
  let table: ReturnType<typeof createRouteTable> | undefined;

  function finish(request: Request, response: Response, id: string, t0: number): Response {
    const seconds = (performance.now() - t0) / 1000;
    const method = METHODS.has(request.method) ? request.method : "OTHER";
    let route = matchedRoute(request);
    if (route === undefined && response.status !== 404) {
      table ??= createRouteTable(app.routes);
      route = table.find(method, routedPath(request.url)) ?? undefined;
    }
    route ??= "unmatched";
    metrics.observeHttp(method, route, response.status, seconds);
    const level = QUIET.has(route) ? "debug" : "info";
    if (logger.enabled(level)) {
      const org = authByRequest.get(request);
      const bytes = response.headers.get("content-length");
      const line: Record<string, unknown> = { method, route, status: response.status, duration_ms: Math.round(seconds * 10_000) / 10, request_id: id };
      if (org) line.org_id = org.org.id;
      if (bytes !== null) line.bytes = Number(bytes);
      logger[level]("HTTP request", line);
    }
    return withHeader(response, id);
  }

  app.handle = (request: Request) => {
    const t0 = performance.now();
    const id = requestIdFrom(request.headers.get("x-request-id"));
    return inner(request).then((response) => finish(request, response, id, t0));
  };
}

/** Sets the id on the response; a response with immutable headers (a proxied fetch) is copied once. */
function withHeader(response: Response, id: string): Response {
  try {
    response.headers.set("x-request-id", id);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    copy.headers.set("x-request-id", id);
    return copy;
  }
}
