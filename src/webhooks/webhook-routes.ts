import { Elysia, t } from "elysia";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { ApiError } from "../http/api-error.ts";
import { pageOf, paginate } from "../http/cursor.ts";
import { bodyInput, emptyBody, field, pageQuery, strictBody } from "../http/input.ts";
import { doc } from "../http/openapi-docs.ts";
import { success } from "../http/envelope.ts";
import { createPageCache, createViewCache, okJson, pageJson } from "../http/view-cache.ts";
import { OutboundRefusedError, type OutboundGuard } from "../net/outbound-guard.ts";
import type { AttemptOutcome } from "./deliver.ts";
import type { DeliveryRow, DeliveryStore } from "./delivery-store.ts";
import type { Dispatcher } from "./dispatcher.ts";
import { MAX_DESCRIPTION, parseEndpointInput } from "./endpoint-input.ts";
import { endpointView, type EndpointRow, type EndpointStore } from "./endpoint-store.ts";
import { EndpointUrlRefused } from "./errors.ts";
import { EVENT_NAMES, isEventName } from "./event-names.ts";
import { sampleEventData, type SampleOptions } from "./sample-events.ts";
import { deliveryView, outcomeView } from "./webhook-views.ts";
import { DeliveryAnswerSchema, DeliveryListSchema, EndpointAnswerSchema, EndpointCreatedSchema, EndpointDeletedSchema, EndpointListSchema } from "./webhook-schemas.ts";

const tags = ["Webhooks"];
const EVENTS_TEXT = EVENT_NAMES.map((e) => `\`${e}\``).join(", ");

const DELIVERY_RULES =
  'Each delivery is an HTTPS POST of `{event, created_at, data}` with headers `X-Service-Event`, `X-Service-Delivery` (unique per delivery, reused by every retry), `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with signing_secret>` and `Content-Type: application/json`. Any 2xx acknowledges; anything else, or no answer within 10 s, is retried after about 1 min, 5 min, 25 min, 2 h, 10 h and 10 h (±10%), then abandoned. Redirects are not followed. The `fields` filter is applied once, when the delivery is built, so a retry sends the same bytes.';

// For the OpenAPI document: the body is checked by parseEndpointInput (and unknown fields refused), not by Elysia.
const endpointBody = t.Object(
  {
    url: t.String({
      description: "https URL of the receiver. http is rejected, and so are hosts that resolve to private, loopback or link-local addresses.",
      examples: ["https://example.com/hooks/video"],
    }),
    events: t.Array(t.String(), { description: `At least one of: ${EVENTS_TEXT}.`, examples: [["VIDEO_TRANSCODING_COMPLETED", "VIDEO_TRANSCODING_FAILED"]] }),
    fields: t.Optional(
      t.Union([t.Array(t.String()), t.Null()], {
        description: "Dot-paths to keep in `data` (e.g. `video.id`, `video.status`). Omitted, null or empty: the whole payload.",
        examples: [["video.id", "video.status"]],
      }),
    ),
    description: t.Optional(t.Union([t.String(), t.Null()], { description: `For your reference, at most ${MAX_DESCRIPTION} characters.` })),
  },
  { additionalProperties: false },
);
const ENDPOINT_FIELDS = Object.keys(endpointBody.properties);
const endpointParams = t.Object({ endpoint_id: t.String({ maxLength: 64 }) });
const deliveryParams = t.Object({ endpoint_id: t.String({ maxLength: 64 }), delivery_id: t.String({ maxLength: 64 }) });
const testInput = bodyInput({
  event: field(t.String({ description: `One of: ${EVENTS_TEXT}.`, examples: ["VIDEO_TRANSCODING_COMPLETED"] }), (v) =>
    isEventName(v) ? { ok: true as const, value: v } : { ok: false as const, error: `must be one of: ${EVENT_NAMES.join(", ")}` },
  ),
});

export interface WebhookRouteDeps {
  endpoints: EndpointStore;
  deliveries: DeliveryStore;
  dispatcher: Dispatcher;
  guard: OutboundGuard;
  /** Base URL and RTMP push base for the sample payloads of the test event. */
  samples: () => SampleOptions;
  /** How long the test and retry routes wait for their attempt before answering without it. */
  waitMs: number;
}

/** Webhook endpoints (spec 4.1-4.3) and their deliveries: list, re-send, test. */
export function webhookRoutes(deps: WebhookRouteDeps) {
  const { endpoints, deliveries, dispatcher } = deps;
  const views = createViewCache<EndpointRow>();
  const pages = createPageCache();

  async function mustGetEndpoint(orgId: string, id: string) {
    const row = await endpoints.get(orgId, id);
    if (!row) throw ApiError.notFound();
    return row;
  }

  async function viewOne(row: DeliveryRow) {
    const fresh = (await deliveries.get(row.endpointId, row.id)) ?? row;
    return deliveryView(fresh, (await deliveries.attemptsOf([row.id])).get(row.id) ?? []);
  }

  const waitFor = (p: Promise<AttemptOutcome | null>) => Promise.race([p, Bun.sleep(deps.waitMs).then(() => null)]);

  return new Elysia({ name: "webhook-routes", prefix: API_PREFIX })
    .use(apiContext())
    .post(
      "/webhooks/",
      async ({ auth, body, set }) => {
        const input = strictBody(body, ENDPOINT_FIELDS, parseEndpointInput);
        try {
          await deps.guard.check(input.url);
        } catch (err) {
          if (err instanceof OutboundRefusedError) throw new EndpointUrlRefused();
          // A name that does not resolve right now is accepted: deliveries check again, and retry.
        }
        const { row, signingSecret } = await endpoints.create(auth.org.id, input);
        set.status = 201;
        return success({ endpoint: endpointView(row), signing_secret: signingSecret }, "Webhook endpoint registered. Store signing_secret now: it is not shown again.");
      },
      {
        permission: "webhooks.manage",
        detail: doc({
          operationId: "createWebhook",
          body: endpointBody,
          data: EndpointCreatedSchema,
          ok: 201,
          errors: ["VALIDATION_ERROR"],
          tags,
          summary: "Register a webhook endpoint",
          description: `Answers 201 with \`data.endpoint\` (\`id\`, \`url\`, \`events\`, \`fields\`, \`description\`, \`created_at\`) and \`data.signing_secret\`, shown this once only. 422 VALIDATION_ERROR with \`error.details.<field>\` for an http or private URL, an empty or unknown event list, a malformed dot-path (or one with a \`__proto__\`, \`constructor\` or \`prototype\` segment) or a description over ${MAX_DESCRIPTION} characters; \`error.details.endpoints\` when the organization already has its maximum of endpoints (20 by default). ${DELIVERY_RULES}`,
        }),
      },
    )
    .get(
      "/webhooks/",
      async ({ auth, request }) => {
        const { page, next_cursor, rows } = await pageOf(pageQuery.parse(request.url), (p) => endpoints.list(auth.org.id, p));
        // Rows are immutable (an endpoint is only ever deleted) and handed out again while the database is unchanged:
        // items serialized once per row, pages once per read (src/http/view-cache.ts).
        return okJson(
          pages(rows, next_cursor ?? "", () =>
            pageJson(
              page.map((row) => views(row, 0, () => endpointView(row))),
              next_cursor,
            ),
          ),
        );
      },
      {
        permission: "webhooks.manage",
        query: pageQuery.schema,
        detail: doc({
          operationId: "listWebhooks",
          data: EndpointListSchema,
          errors: ["VALIDATION_ERROR"],
          tags,
          summary: "List webhook endpoints",
          description: "Newest first, `data.items` and `data.next_cursor`; `limit` (1-100, default 20) and `cursor`; any other query parameter is 422 naming it. Signing secrets are never listed.",
        }),
      },
    )
    .get("/webhooks/:endpoint_id/", async ({ auth, params }) => success({ endpoint: endpointView(await mustGetEndpoint(auth.org.id, params.endpoint_id)) }), {
      permission: "webhooks.manage",
      params: endpointParams,
      detail: doc({
        operationId: "getWebhook",
        data: EndpointAnswerSchema,
        errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        tags,
        summary: "Get a webhook endpoint",
        description: "The endpoint record, without its signing secret. 404 NOT_FOUND for an unknown id or another organization's.",
      }),
    })
    .delete(
      "/webhooks/:endpoint_id/",
      async ({ auth, params }) => {
        const removed = await endpoints.remove(auth.org.id, params.endpoint_id);
        if (!removed) throw ApiError.notFound();
        dispatcher.forgetEndpoint(params.endpoint_id);
        return success({ id: params.endpoint_id, deleted: true, dropped_deliveries: removed.dropped }, "Webhook endpoint deleted; its pending deliveries were dropped.");
      },
      {
        permission: "webhooks.manage",
        params: endpointParams,
        detail: doc({
          operationId: "deleteWebhook",
          data: EndpointDeletedSchema,
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
          tags,
          summary: "Remove a webhook endpoint",
          description:
            "Stops future deliveries and drops every delivery queued for retry, including one whose retry is already scheduled. Answers `data.id`, `data.deleted` and `data.dropped_deliveries`. 404 NOT_FOUND for an unknown id or another organization's.",
        }),
      },
    )
    .get(
      "/webhooks/:endpoint_id/deliveries/",
      async ({ auth, params, request }) => {
        const query = pageQuery.parse(request.url);
        await mustGetEndpoint(auth.org.id, params.endpoint_id);
        const page = await paginate(
          query,
          (p) => deliveries.list(params.endpoint_id, p),
          (d) => d,
        );
        const attempts = await deliveries.attemptsOf(page.items.map((d) => d.id));
        return success({ items: page.items.map((d) => deliveryView(d, attempts.get(d.id) ?? [])), next_cursor: page.next_cursor });
      },
      {
        permission: "webhooks.manage",
        params: endpointParams,
        query: pageQuery.schema,
        detail: doc({
          operationId: "listWebhookDeliveries",
          data: DeliveryListSchema,
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
          tags,
          summary: "List recent deliveries of an endpoint",
          description:
            "Newest first, `data.items` and `data.next_cursor`. Each delivery: `id` (the `X-Service-Delivery` header), `event`, `status` (`PENDING`, `DELIVERED` or `ABANDONED`), `test`, `created_at`, `next_attempt_at` (while pending) and `attempts`, each with `started_at`, `status_code` (null without an answer), `duration_ms`, `error` and `manual`. Deliveries are kept 30 days.",
        }),
      },
    )
    .post(
      "/webhooks/:endpoint_id/deliveries/:delivery_id/retry/",
      async ({ auth, params, body }) => {
        emptyBody.parse(body); // takes no fields
        await mustGetEndpoint(auth.org.id, params.endpoint_id);
        const row = await deliveries.get(params.endpoint_id, params.delivery_id);
        if (!row || row.status === "dropped") throw ApiError.notFound();
        const attempt = await waitFor(dispatcher.resend(row));
        return success({ delivery: await viewOne(row), attempt: outcomeView(attempt) }, attempt?.error ? "Re-sent; the receiver did not acknowledge." : "Re-sent.");
      },
      {
        permission: "webhooks.manage",
        params: deliveryParams,
        detail: doc({
          operationId: "retryWebhookDelivery",
          data: DeliveryAnswerSchema,
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
          tags,
          summary: "Re-send a delivery now",
          description:
            "Makes one attempt at once with the same `X-Service-Delivery` id and the same body bytes (a new signature timestamp), whatever the delivery's status. Success marks it `DELIVERED`; a failure leaves its status and retry schedule as they were. Answers `data.delivery` and `data.attempt` (null if the attempt has not finished within the request).",
        }),
      },
    )
    .post(
      "/webhooks/:endpoint_id/test/",
      async ({ auth, params, body, set }) => {
        const { event } = testInput.parse(body);
        const endpoint = await mustGetEndpoint(auth.org.id, params.endpoint_id);
        const sent = await dispatcher.sendOne(endpoint.id, event, sampleEventData(event, deps.samples()), { test: true });
        if (!sent) throw ApiError.notFound();
        const attempt = await waitFor(sent.outcome);
        set.status = 201;
        return success({ delivery: await viewOne(sent.row), attempt: outcomeView(attempt) }, "Test delivery created.");
      },
      {
        permission: "webhooks.manage",
        params: endpointParams,
        detail: doc({
          operationId: "testWebhook",
          body: testInput.schema,
          data: DeliveryAnswerSchema,
          ok: 201,
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
          tags,
          summary: "Send a test event",
          description: `Builds a realistic sample payload of \`event\` (${EVENTS_TEXT}) and delivers it to this endpoint through the normal path: signed, trimmed by \`fields\`, retried on failure, listed among the deliveries with \`test: true\`. Answers 201 with \`data.delivery\` and \`data.attempt\` (the first attempt, null if it has not finished within the request).`,
        }),
      },
    );
}
