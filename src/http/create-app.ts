import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import type { Logger } from "../log.ts";
import type { OrgStore } from "../orgs/org-store.ts";
import { dependencyFailure } from "../dependency-errors.ts";
import { DomainError } from "../errors.ts";
import { ApiError } from "./api-error.ts";
import { domainErrorResponse } from "./domain-error-map.ts";
import { API_PREFIX, authByRequest } from "./api-context.ts";
import { authenticate } from "./authenticate.ts";
import { errorResponse, invalidApiKeyResponse } from "./envelope.ts";
import type { RateLimiter } from "./rate-limiter.ts";
import { orgLimitFor } from "./route-limits.ts";
import { validationDetails } from "./validation-details.ts";
import { routedPath } from "./canonical-request.ts";
import { emptyBody } from "./input.ts";
import { readJsonBody } from "./json-body.ts";
import { markRoute } from "./matched-route.ts";
import { payloadTooLarge } from "./bounded-body.ts";
import { BODY_LIMITS } from "./route-limits.ts";
import { createRouteTable } from "./route-table.ts";
import { isTusPath, tusWithoutKey } from "./tus-requests.ts";
import { componentSchemas, envelopeSchemas } from "./openapi-docs.ts";

/** JSON bodies: refused in onRequest when their declared length is over it, counted while read by the app's own parser (json-body.ts). */
export const MAX_JSON_BYTES = BODY_LIMITS.apiJson;

export interface AppDeps {
  orgs: OrgStore;
  rateLimiter: RateLimiter;
  logger: Logger;
  /** Route plugins of each domain (videos, livestreams, webhooks, ...). */
  plugins: Elysia<any, any, any, any, any, any, any>[];
  /** Non-API routes (media files, uploads, live HLS) that carry their own access rules. */
  publicPlugins?: Elysia<any, any, any, any, any, any, any>[];
  version?: string;
  /** The public base URL: the document's `servers` (BASE_URL; read when the document is built, after listen). */
  baseUrl?: () => string;
  /** OpenAPI 3.1 `webhooks`: the event payloads (src/webhooks/event-schemas.ts). */
  webhooks?: Record<string, unknown>;
}

const require = createRequire(import.meta.url);
// The package exports no subpath for its browser bundle: find it beside package.json.
const SCALAR_BUNDLE = join(dirname(require.resolve("@scalar/api-reference/package.json")), "dist/browser/standalone.js");

/** A path whose percent-encoding does not decode names nothing: 404, before any route sees it. */
function malformedPath(path: string): boolean {
  if (!path.includes("%")) return false;
  try {
    decodeURIComponent(path);
    return false;
  } catch {
    return true;
  }
}

const NO_SUCH_ROUTE = () => errorResponse(new ApiError("NOT_FOUND", "No such route."));

/** Whether a request declares a body, whatever its method. */
function hasBody(request: Request): boolean {
  const len = request.headers.get("content-length");
  if (len !== null) return Number(len) > 0;
  return request.headers.has("transfer-encoding");
}

const GET_NO_BODY = { body: "must be absent: GET and HEAD take no body" };

function isJson(contentType: string | null): boolean {
  return !!contentType && /^application\/json\s*(;|$)/i.test(contentType);
}

export function createApp(deps: AppDeps) {
  const { orgs, rateLimiter, logger } = deps;
  // Built on first use, once every plugin has registered its routes.
  let table: ReturnType<typeof createRouteTable> | undefined;
  let bodyRoutes: Set<string> | undefined;
  /** Whether the route (its template) takes a body: exactly the operations whose OpenAPI document has a `requestBody`. */
  const takesBody = (method: string, route: string) => {
    bodyRoutes ??= new Set(
      (app.routes as Array<{ method: string; path: string; hooks?: { detail?: { requestBody?: unknown } } }>).filter((r) => r.hooks?.detail?.requestBody).map((r) => `${r.method} ${r.path}`),
    );
    return bodyRoutes.has(`${method} ${route}`);
  };
  /** A known path asked with a method none of its routes takes: 405 with `Allow` (RFC 9110 15.5.6), else null. */
  const methodNotAllowed = (request: Request): Response | null => {
    table ??= createRouteTable(app.routes);
    const allowed = table.methodsAt(routedPath(request.url));
    if (allowed.length === 0 || allowed.includes(request.method) || allowed.includes("ALL")) return null;
    const allow = allowed.join(", ");
    return errorResponse(new ApiError("METHOD_NOT_ALLOWED", `This path takes ${allow}, not ${request.method}.`, undefined, { allow }));
  };

  const app = new Elysia({ name: "app" })
    // First, so every route (openapi's too) records its template for the access log and metrics (src/ops).
    .onTransform({ as: "global" }, markRoute)
    .use(
      openapi({
        path: "/openapi",
        // The default page loads Scalar from a CDN, unreachable offline: serve the bundle ourselves. The rest keeps the
        // page on this origin (no web fonts from Scalar's CDN, no telemetry) and hides what needs Scalar's hosted services
        // (the API client window, the AI agent, the developer toolbar).
        scalar: {
          cdn: "/openapi/scalar.js",
          withDefaultFonts: false,
          telemetry: false,
          hideClientButton: true,
          showDeveloperTools: "never",
          agent: { disabled: true },
        } as never,
        documentation: {
          info: {
            title: "Video library and live streaming API",
            version: deps.version ?? "1.0.0",
            description:
              "Register videos to transcode into HLS renditions and downloads, run RTMP live streams recorded into the library, and receive signed webhooks. Every response is the envelope `{success, message, data | error, meta}`. Beyond each operation's own answers: a known path asked with a method it does not take is 405 `METHOD_NOT_ALLOWED` with `Allow` listing the methods it takes; an unknown path, or an id longer than 64 characters, is 404 `NOT_FOUND`; a body is counted while it is read, and one over its route's limit (1 MiB for JSON, with or without `Content-Length`) is 413 `PAYLOAD_TOO_LARGE`; a body on an operation that takes none (anything but `{}` or `null`) is 422 `VALIDATION_ERROR`.",
          },
          components: {
            // A getter too: the named response schemas (openapi-docs.ts `named`) are collected as the routes call doc().
            get schemas() {
              return { ...envelopeSchemas, ...componentSchemas() };
            },
            securitySchemes: {
              bearerAuth: { type: "http", scheme: "bearer", description: "`Authorization: Bearer sk_live_<prefix>_<secret>`" },
              apiKeyHeader: { type: "apiKey", in: "header", name: "X-API-Key", description: "The same key, instead of Authorization." },
            },
          },
          security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
          // A getter: the plugin spreads `documentation` when it builds the document, once the port (PORT=0) is known.
          get servers() {
            return deps.baseUrl ? [{ url: deps.baseUrl(), description: "This service (BASE_URL)." }] : undefined;
          },
          ...(deps.webhooks ? { webhooks: deps.webhooks } : {}),
        } as never,
        // staticFile: false keeps routes whose path has a dot (`/image/{id}/thumbnail.{format}`); files are hidden or excluded by path.
        exclude: { paths: ["/openapi/scalar.js"], staticFile: false },
      }),
    )
    .get("/openapi/scalar.js", () => new Response(Bun.file(SCALAR_BUNDLE), { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" } }), {
      detail: { hide: true },
    })
    .onRequest(async ({ request }) => {
      // The path Elysia routes (see canonical-request.ts), so this hook always judges the routed path.
      const path = routedPath(request.url);
      if (!path.startsWith(API_PREFIX)) return malformedPath(path) ? NO_SUCH_ROUTE() : undefined;
      // Resumable uploads: a preflight or a presigned token is judged by the tus route itself (src/videos/tus-uploads.ts).
      const tus = isTusPath(path);
      if (tus && tusWithoutKey(request)) return malformedPath(path) ? NO_SUCH_ROUTE() : undefined;
      const auth = await authenticate(orgs, request.headers);
      if (!auth) return invalidApiKeyResponse();
      authByRequest.set(request, auth);

      const { limits } = auth.org.settings;
      const checks = [auth.keyCheck];
      const orgLimit = orgLimitFor(request.method, path.slice(API_PREFIX.length), limits);
      if (orgLimit) checks.push({ key: `org:${auth.org.id}:${orgLimit.name}`, limit: orgLimit.limit });
      // Memory answers synchronously: no extra await on the embedded default's hot path.
      const pending = rateLimiter.hit(checks);
      const verdict = pending instanceof Promise ? await pending : pending;
      if (!verdict.ok) {
        return errorResponse(new ApiError("RATE_LIMITED", undefined, undefined, { "retry-after": String(verdict.retryAfterSeconds) }));
      }

      if (malformedPath(path)) return NO_SUCH_ROUTE();

      // Bun hands a GET or HEAD no body (it drops what one sends): none of their routes takes one, so one declared is refused.
      if ((request.method === "GET" || request.method === "HEAD") && hasBody(request)) return errorResponse(ApiError.validation(GET_NO_BODY));
      // A tus body is the file's bytes, not JSON.
      if (hasBody(request) && !tus) {
        if (!isJson(request.headers.get("content-type"))) {
          return errorResponse(ApiError.validation({ "Content-Type": "must be application/json" }));
        }
        // A declared length over the limit is refused before routing; any other body is counted while read (json-body.ts).
        const declared = request.headers.get("content-length");
        if (declared !== null && Number(declared) > MAX_JSON_BYTES) return errorResponse(payloadTooLarge(MAX_JSON_BYTES));
      }
    })
    .onError({ as: "global" }, ({ code, error, request }) => {
      if (error instanceof ApiError) return errorResponse(error);
      // Before the code checks below: a domain NotFound must not read as "No such route".
      if (error instanceof DomainError) return domainErrorResponse(error);
      if (code === "VALIDATION") {
        // A path parameter out of its shape (an id over 64 characters) names nothing: 404 as any unknown id.
        if ((error as { type?: string }).type === "params") return errorResponse(ApiError.notFound());
        return errorResponse(ApiError.validation(validationDetails(error)));
      }
      if (code === "PARSE") {
        const cause = (error as { cause?: unknown }).cause;
        return errorResponse(cause instanceof ApiError ? cause : ApiError.validation({ body: "is not valid JSON" }));
      }
      if (code === "NOT_FOUND") return methodNotAllowed(request) ?? NO_SUCH_ROUTE();
      // The database or the object store down or too slow: 503 with Retry-After, never a bare 500.
      const down = dependencyFailure(error);
      if (down) {
        logger.warn("Dependency unavailable", { dependency: down.dependency, err: error, method: request.method, path: new URL(request.url).pathname });
        return domainErrorResponse(down);
      }
      logger.error("Unhandled error in request", { err: error, method: request.method, url: request.url });
      return errorResponse(new ApiError("INTERNAL_ERROR"));
    });

  for (const p of deps.publicPlugins ?? []) app.use(p);
  // JSON bodies of the API routes (registered after this hook; the public routes above parse their own).
  app.onParse({ as: "global" }, ({ request }, contentType) => (isJson(contentType) ? readJsonBody(request) : undefined));
  // A route that takes no body (POST actions, DELETE) refuses one (422), after permission and parameter checks, as body
  // validation is; the JSON parser above has read it, bounded. GET and HEAD: onRequest.
  app.onBeforeHandle({ as: "global" }, ({ request, route, body }) => {
    if (request.method === "GET" || request.method === "HEAD" || takesBody(request.method, route)) return;
    // Nothing, `{}` or `null` (docs/decisions.md "Strict input"); else each field "is not a known field", or details.body.
    emptyBody.parse(body);
  });
  for (const p of deps.plugins) app.use(p);
  return app;
}

export type App = ReturnType<typeof createApp>;
