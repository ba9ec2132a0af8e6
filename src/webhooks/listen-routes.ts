import { Elysia, t } from "elysia";
import type { Database } from "../db/create-database.ts";
import type { Outbox } from "../outbox/outbox.ts";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { ApiError } from "../http/api-error.ts";
import { success } from "../http/envelope.ts";
import { bodyInput, enumListParam, field, queryInput, queryInteger, type QueryField } from "../http/input.ts";
import { doc, strictObject } from "../http/openapi-docs.ts";
import { EVENT_NAMES, isEventName } from "./event-names.ts";
import { ListenLimitReached, TEST_ENTITY_PREFIX, type ListenHub } from "./listen-hub.ts";
import { sampleEventData, type SampleOptions } from "./sample-events.ts";

const tags = ["Webhooks"];

const afterParam: QueryField<number> = {
  schema: queryInteger({ description: "Resume after this `seq` (the SSE `id` of the last event received); `Last-Event-ID` does the same.", minimum: 0 }),
  check: (v) => (/^[0-9]{1,15}$/.test(v) ? { ok: true, value: Number(v) } : { ok: false, error: "must be a non-negative integer (an event's seq)" }),
};
const listenQuery = queryInput({ events: enumListParam(EVENT_NAMES, "events"), after: afterParam });

const triggerInput = bodyInput({
  event: field(t.String({ description: `One of: ${EVENT_NAMES.join(", ")}.`, examples: ["VIDEO_TRANSCODING_COMPLETED"] }), (v) =>
    isEventName(v) ? { ok: true as const, value: v } : { ok: false as const, error: `must be one of: ${EVENT_NAMES.join(", ")}` },
  ),
});
const TriggeredSchema = strictObject({ id: t.String({ description: "The event's id (`X-Service-Delivery` of the forwarded POST)." }), event: t.String(), seq: t.Integer() });

function lastEventId(header: string | null): number | undefined {
  return header && /^[0-9]{1,15}$/.test(header.trim()) ? Number(header.trim()) : undefined;
}

/**
 * `cli listen` and `cli trigger` (issue 16): the organization's events as
 * Server-Sent Events, and sample events for them. The stream is read from the
 * outbox, so it works whichever process wrote the event.
 */
export function listenRoutes(deps: { hub: ListenHub; database: Database; samples: () => SampleOptions; outbox: Outbox }) {
  const { hub } = deps;
  return new Elysia({ name: "webhook-listen-routes", prefix: API_PREFIX })
    .use(apiContext())
    .get(
      "/webhooks/listen/",
      async ({ auth, request }) => {
        const q = listenQuery.parse(request.url);
        const after = q.after ?? lastEventId(request.headers.get("last-event-id"));
        try {
          const stream = await hub.open(auth.org.id, { after, events: q.events, signal: request.signal });
          return new Response(stream, {
            headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" },
          });
        } catch (err) {
          if (err instanceof ListenLimitReached) throw new ApiError("RATE_LIMITED", err.message, undefined, { "retry-after": "5" });
          throw err;
        }
      },
      {
        permission: "webhooks.manage",
        query: listenQuery.schema,
        detail: (() => {
          const d = doc({
            operationId: "listenWebhookEvents",
            tags,
            summary: "Listen to the organization's events (Server-Sent Events)",
            description:
              "For `npm run cli -- listen --forward-to URL`: a `text/event-stream` of this organization's events as they are committed, whichever process wrote them. Each event: `id` (its `seq`, for `Last-Event-ID` or `?after=`), `event` (the event name) and `data`, a JSON object `{id, seq, event, test, body}` where `body` is the exact string a webhook delivery POSTs (no `fields` filter). A `: ping` comment every 15 s. Without `after` the stream starts with the next event. `events` keeps only those names. At most 5 listeners per organization (429 RATE_LIMITED past it).",
            data: t.Object({}),
            errors: ["VALIDATION_ERROR"],
          });
          return { ...d, responses: { ...d.responses, 200: { description: "The event stream.", content: { "text/event-stream": { schema: { type: "string" } } } } } };
        })(),
      },
    )
    .post(
      "/webhooks/trigger/",
      async ({ auth, body, set }) => {
        const { event } = triggerInput.parse(body);
        const data = sampleEventData(event, deps.samples());
        const entity = (Object.values(data)[0] as { id?: string } | undefined)?.id ?? "sample";
        // Born fanned out: the dispatcher never sends it to the organization's endpoints (`…/test/` does that); listeners get it.
        const [inserted] = await deps.database.write((tx) => deps.outbox.append(tx, [{ orgId: auth.org.id, entityId: `${TEST_ENTITY_PREFIX}${entity}`, event, data, fannedOut: true }]));
        hub.wake();
        set.status = 201;
        return success({ id: inserted!.id, event, seq: inserted!.seq }, "Test event sent to listeners.");
      },
      {
        permission: "webhooks.manage",
        detail: doc({
          operationId: "triggerWebhookEvent",
          tags,
          summary: "Trigger a test event for listeners",
          description:
            "For `npm run cli -- trigger EVENT`: a realistic sample of `event` (the payload the real pipeline builds) is written to this organization's event stream with `test: true`, so every `cli listen` receives it. It is not delivered to registered endpoints: use `POST /webhooks/{endpoint_id}/test/` for those.",
          ok: 201,
          data: TriggeredSchema,
          body: triggerInput.schema,
          errors: ["VALIDATION_ERROR"],
        }),
      },
    );
}
