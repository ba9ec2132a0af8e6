import { Elysia, t } from "elysia";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { ApiError } from "../http/api-error.ts";
import { success } from "../http/envelope.ts";
import { doc, errorResponses, jsonSchema, operationId } from "../http/openapi-docs.ts";
import { analyticsQuerySchema, parseAnalyticsQuery } from "./analytics-query.ts";
import type { AnalyticsReads } from "./analytics-reads.ts";
import { AnalyticsOverviewSchema, BeaconBodySchema, LivestreamAnalyticsSchema, VideoAnalyticsSchema } from "./analytics-schemas.ts";
import type { AssetLookup } from "./asset-lookup.ts";
import { BEACON_MAX_BYTES } from "./beacon-input.ts";
import { BEACONS_PATH, type BeaconIntake } from "./beacon-intake.ts";

const tags = ["Analytics"];
const idParams = t.Object({ id: t.String({ maxLength: 64 }) });
const RANGE =
  "`from`/`to` (ISO 8601 with a time zone; default the last 24 h) and `granularity` (`minute`, `hour` default, `day`). A view counts in the minute it started, once it is closed (at `viewend`, `ended` or after 60 s without a beacon). Figures are exact for the events received: percentiles are nearest-rank over the stored per-view values, and totals equal whichever process received the beacons.";

/** The analytics read API (`analytics.read`): per video, per stream (plus concurrent viewers), per organization. */
export function analyticsRoutes(deps: { reads: AnalyticsReads; lookup: AssetLookup }) {
  async function owned(orgId: string, id: string, kind: "video" | "livestream"): Promise<void> {
    const asset = await deps.lookup.of(id, kind);
    if (!asset || asset.orgId !== orgId) throw new ApiError("NOT_FOUND");
  }
  return new Elysia({ name: "analytics-routes", prefix: API_PREFIX })
    .use(apiContext())
    .get(
      "/videos/:id/analytics/",
      async ({ auth, params, request }) => {
        const range = parseAnalyticsQuery(request.url);
        await owned(auth.org.id, params.id, "video");
        return success(await deps.reads.asset(params.id, range));
      },
      {
        permission: "analytics.read",
        params: idParams,
        query: analyticsQuerySchema,
        detail: doc({
          operationId: "getVideoAnalytics",
          data: VideoAnalyticsSchema,
          errors: ["NOT_FOUND"],
          tags,
          summary: "A video's viewer analytics",
          description: `Views, unique viewers, watch time, startup time (p50/p95), rebuffer ratio, error rate, a series and the top countries, browsers, OSes, device types and renditions. ${RANGE} 404 NOT_FOUND for an unknown id or another organization's.`,
        }),
      },
    )
    .get(
      "/livestreams/:id/analytics/",
      async ({ auth, params, request }) => {
        const range = parseAnalyticsQuery(request.url);
        await owned(auth.org.id, params.id, "livestream");
        const [figures, concurrent] = await Promise.all([deps.reads.asset(params.id, range), deps.reads.concurrency(params.id, range)]);
        return success({ ...figures, concurrent_viewers: concurrent });
      },
      {
        permission: "analytics.read",
        params: idParams,
        query: analyticsQuerySchema,
        detail: doc({
          operationId: "getLivestreamAnalytics",
          data: LivestreamAnalyticsSchema,
          errors: ["NOT_FOUND"],
          tags,
          summary: "A live stream's viewer analytics",
          description: `The same figures as a video's, plus \`concurrent_viewers\`: HLS viewers (views from their first to their last beacon) and WHEP viewers (every process's WebRTC sessions, sampled every 10 s) alike; each bucket holds its highest count, \`peak\` the range's. ${RANGE} 404 NOT_FOUND for an unknown id or another organization's.`,
        }),
      },
    )
    .get("/analytics/overview/", async ({ auth, request }) => success(await deps.reads.overview(auth.org.id, parseAnalyticsQuery(request.url))), {
      permission: "analytics.read",
      query: analyticsQuerySchema,
      detail: doc({
        operationId: "getAnalyticsOverview",
        data: AnalyticsOverviewSchema,
        tags,
        summary: "The organization's viewer analytics",
        description: `Totals over every video and stream, a series, the top 10 videos and streams by views and the top countries, browsers, OSes, device types and renditions. ${RANGE}`,
      }),
    });
}

/** `POST /beacons/` and its preflight, public (no API key): src/analytics/beacon-intake.ts. */
export function beaconRoutes(intake: BeaconIntake) {
  const handle = ({ request, server }: { request: Request; server: { requestIP(r: Request): { address: string } | null } | null }) => intake(request, server?.requestIP(request)?.address);
  return new Elysia({ name: "beacon-routes" }).options(BEACONS_PATH, handle, { detail: { hide: true } }).post(BEACONS_PATH, handle, {
    parse: "none",
    detail: {
      operationId: operationId("createBeacons"),
      tags,
      summary: "Send player beacons",
      description: `What \`trackPlayback\` (packages/client) sends: an array of events (at most 500, at most ${BEACON_MAX_BYTES / 1024} KiB) as JSON of any content type (\`navigator.sendBeacon\` sends \`text/plain\`, which needs no preflight). No API key, no cookies; CORS \`*\`. Answers 204 once accepted (stored within a moment, batched). Events naming an unknown or deleted video or stream, or a signed one without a valid playback \`token\`, are dropped without a word (the answer is the same 204). 400 BAD_REQUEST for a body that is not JSON; 422 VALIDATION_ERROR naming each bad field as \`[index].field\`; 413 PAYLOAD_TOO_LARGE; 429 RATE_LIMITED per client address (BEACONS_PER_MINUTE_PER_ADDRESS, default 1200; TRUST_PROXY decides the address). No raw address or user agent is stored: the country (from a database inside the npm package) and the browser, OS and device type.`,
      security: [],
      requestBody: { required: true, content: { "text/plain": { schema: jsonSchema(BeaconBodySchema) }, "application/json": { schema: jsonSchema(BeaconBodySchema) } } },
      responses: { 204: { description: "Accepted." }, ...errorResponses(["BAD_REQUEST", "PAYLOAD_TOO_LARGE", "VALIDATION_ERROR", "RATE_LIMITED", "INTERNAL_ERROR"]) } as any,
    },
  });
}
