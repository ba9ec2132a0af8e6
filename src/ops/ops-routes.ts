import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import type { Logger } from "../log.ts";
import type { Metrics } from "./metrics.ts";
import { type Checks, checkReadiness } from "./readiness.ts";

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "cache-control": "no-store" } });
const digest = (s: string) => createHash("sha256").update(s).digest();

const checkSchema = {
  type: "object",
  required: ["ok"],
  properties: { ok: { type: "boolean" }, detail: { type: "string", description: "What was checked (backend, port), or why it failed; never an internal error text." } },
};
const readySchema = {
  type: "object",
  required: ["status", "failed", "checks"],
  properties: {
    status: { type: "string", enum: ["ready", "unavailable"] },
    failed: { type: "array", items: { type: "string", enum: ["database", "storage", "transcoder", "ingest"] }, description: "The checks that failed (empty when ready)." },
    checks: {
      type: "object",
      required: ["database", "storage", "transcoder", "ingest"],
      properties: { database: checkSchema, storage: checkSchema, transcoder: checkSchema, ingest: checkSchema },
    },
  },
};

/**
 * Probes and metrics, outside the API prefix and without an API key (the
 * authentication hook looks only at /api/public/v1). `/metrics` is open unless
 * METRICS_TOKEN is set (Prometheus convention: the operator chooses who can
 * reach the port); with it, `Authorization: Bearer <token>` is required.
 */
export function opsRoutes(deps: { metrics: Metrics; checks: Checks; logger: Logger; metricsToken: string | undefined }) {
  const expected = deps.metricsToken ? digest(deps.metricsToken) : null;
  const authorized = (header: string | null) => {
    if (!expected) return true;
    const given = header?.startsWith("Bearer ") ? header.slice(7) : null;
    // Compared as digests: equal lengths for timingSafeEqual, nothing learned from the time taken.
    return given !== null && timingSafeEqual(digest(given), expected);
  };

  return new Elysia({ name: "ops-routes" })
    .get("/healthz", () => json(200, { status: "ok" }), {
      detail: {
        tags: ["Operations"],
        operationId: "getHealth",
        summary: "Liveness probe",
        description: "Answers 200 while the process runs. Touches no dependency: a database outage does not make it fail (see /readyz). No API key.",
        security: [],
        responses: {
          200: {
            description: "The process is up.",
            content: { "application/json": { schema: { type: "object", required: ["status"], properties: { status: { type: "string", enum: ["ok"] } } } } },
          },
        },
      } as never,
    })
    .get(
      "/readyz",
      async () => {
        const r = await checkReadiness(deps.checks, deps.logger);
        return json(r.ready ? 200 : 503, { status: r.ready ? "ready" : "unavailable", failed: r.failed, checks: r.checks });
      },
      {
        detail: {
          tags: ["Operations"],
          operationId: "getReadiness",
          summary: "Readiness probe",
          description:
            "Checks, each within 2 s: the database takes a write (an empty write transaction through the process's write queue, so a database that answers reads but no writes is not ready), the storage (DATA_DIR or the S3 bucket) answers, the transcoder backend chosen by MEDIA_BACKEND can run, and the RTMP ingest is listening. 200 when all pass; 503 naming the failed checks. No API key.",
          security: [],
          responses: {
            200: { description: "Every check passed.", content: { "application/json": { schema: readySchema } } },
            503: { description: "At least one check failed; `failed` names them.", content: { "application/json": { schema: readySchema } } },
          },
        } as never,
      },
    )
    .get(
      "/metrics",
      async ({ request }) => {
        if (!authorized(request.headers.get("authorization"))) {
          return new Response("A metrics token is required: Authorization: Bearer <METRICS_TOKEN>\n", {
            status: 401,
            headers: { "content-type": "text/plain; charset=utf-8", "www-authenticate": 'Bearer realm="metrics"' },
          });
        }
        const body = await deps.metrics.registry.metrics();
        return new Response(body, { headers: { "content-type": deps.metrics.registry.contentType, "cache-control": "no-store" } });
      },
      {
        detail: {
          tags: ["Operations"],
          operationId: "getMetrics",
          summary: "Prometheus metrics",
          description:
            "Prometheus text format: HTTP requests by route template and status with latency histograms, work queue depth and job durations, the transcode realtime factor, webhook delivery outcomes, live streams and viewers, process metrics. Open unless the service runs with METRICS_TOKEN, then `Authorization: Bearer <METRICS_TOKEN>`. Labels never carry organization ids or names.",
          security: [],
          responses: {
            200: { description: "The metrics.", content: { "text/plain": { schema: { type: "string" } } } },
            401: { description: "METRICS_TOKEN is set and the request did not carry it.", content: { "text/plain": { schema: { type: "string" } } } },
          },
        } as never,
      },
    );
}
