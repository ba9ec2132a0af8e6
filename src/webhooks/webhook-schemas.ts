import { type Static, t } from "elysia";
import { type Equals, named, integer, isoTime, nullable, pageOf, strictObject } from "../http/openapi-docs.ts";
import type { endpointView } from "./endpoint-store.ts";
import type { attemptView, deliveryView, outcomeView } from "./webhook-views.ts";

/**
 * The response schemas of the webhook endpoint API, pinned by `Equals` to the
 * views that build the bodies (a field added on one side fails tsc).
 */

export const EndpointSchema = strictObject({
  id: t.String({ description: "The endpoint's id (`we_…`)." }),
  url: t.String(),
  events: t.Array(t.String(), { description: "Event names it receives." }),
  fields: t.Array(t.String(), { description: "Dot-paths kept in `data`; empty: the whole payload." }),
  description: nullable(t.String()),
  created_at: isoTime(),
});

export const EndpointListSchema = pageOf(EndpointSchema);
export const EndpointAnswerSchema = strictObject({ endpoint: EndpointSchema });
export const EndpointCreatedSchema = strictObject({
  endpoint: EndpointSchema,
  signing_secret: t.String({ description: "HMAC-SHA256 key of `X-Service-Signature`. Shown this once only: store it now." }),
});
export const EndpointDeletedSchema = strictObject({
  id: t.String(),
  deleted: t.Literal(true),
  dropped_deliveries: integer({ description: "Deliveries that were still queued for retry." }),
});

const AttemptSchema = strictObject({
  started_at: nullable(isoTime()),
  status_code: nullable(integer(), { description: "The receiver's HTTP status; null without an answer." }),
  duration_ms: integer(),
  error: nullable(t.String()),
  manual: t.Boolean({ description: "Made by POST …/retry/." }),
});

export const DeliverySchema = strictObject({
  id: t.String({ description: "The `X-Service-Delivery` header." }),
  event: t.String(),
  status: t.String({ description: "PENDING, DELIVERED or ABANDONED." }),
  test: t.Boolean(),
  created_at: nullable(isoTime()),
  next_attempt_at: nullable(isoTime(), { description: "While PENDING." }),
  attempts: t.Array(AttemptSchema),
});

export const DeliveryListSchema = pageOf(DeliverySchema);

const OutcomeSchema = nullable(strictObject({ started_at: nullable(isoTime()), status_code: nullable(integer()), duration_ms: integer(), error: nullable(t.String()) }), {
  description: "The attempt made by this request; null if it had not finished within the request.",
});

export const DeliveryAnswerSchema = strictObject({ delivery: DeliverySchema, attempt: OutcomeSchema });

// Drift guards (see Equals).
const _endpoint: Equals<Static<typeof EndpointSchema>, ReturnType<typeof endpointView>> = true;
const _attempt: Equals<Static<typeof AttemptSchema>, ReturnType<typeof attemptView>> = true;
const _delivery: Equals<Static<typeof DeliverySchema>, ReturnType<typeof deliveryView>> = true;
const _outcome: Equals<Static<typeof OutcomeSchema>, ReturnType<typeof outcomeView>> = true;
void [_endpoint, _attempt, _delivery, _outcome];

// Named in the document (components.schemas), so clients get these types by name.
named("WebhookEndpoint", EndpointSchema);
named("WebhookDelivery", DeliverySchema);
named("WebhookAttempt", AttemptSchema);
