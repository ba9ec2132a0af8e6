import { t, type TSchema } from "elysia";
import { FullStreamEventDataSchema, SmallStreamEventDataSchema } from "../live/livestream-resource-schema.ts";
import { OutputEventDataSchema } from "../live/outputs/output-schemas.ts";
import { isoTime, jsonSchema, strictObject } from "../http/openapi-docs.ts";
import { VideoEventDataSchema } from "../videos/video-resource-schema.ts";
import { EVENT_NAMES, type EventName } from "./event-names.ts";
import { sampleEventData } from "./sample-events.ts";

/**
 * The `data` of each event, from the schemas pinned to the payload builders
 * (machines/video-payload.ts, machines/livestream-payload.ts). An endpoint's
 * `fields` filter trims `data` to the paths it names.
 */
const EVENT_DATA: Record<EventName, { data: TSchema; summary: string }> = {
  VIDEO_UPLOADED: { data: VideoEventDataSchema, summary: "A video was registered; its transcode is queued." },
  VIDEO_TRANSCODING_STARTED: { data: VideoEventDataSchema, summary: "A worker started transcoding the video." },
  VIDEO_PLAYABLE: {
    data: VideoEventDataSchema,
    summary:
      "The video plays while it is still transcoding (issue 29): `video.url` is its master playlist, status TRANSCODING. Once per attempt, before VIDEO_TRANSCODING_COMPLETED (at it at the latest, e.g. for DRM).",
  },
  VIDEO_TRANSCODING_COMPLETED: { data: VideoEventDataSchema, summary: "The video is playable: renditions, downloads, storage." },
  VIDEO_TRANSCODING_FAILED: { data: VideoEventDataSchema, summary: "The video could not be fetched or transcoded: `error`." },
  LIVESTREAM_SCHEDULED: { data: FullStreamEventDataSchema, summary: "A live stream was created (READY_TO_STREAM) or booked (SCHEDULED)." },
  LIVESTREAM_STARTED: { data: FullStreamEventDataSchema, summary: "Media arrived: the stream is LIVE and `hls_url` plays." },
  LIVESTREAM_ENDED: {
    data: t.Union([FullStreamEventDataSchema, SmallStreamEventDataSchema]),
    summary: "The broadcast ended: the full shape after an explicit end, the small shape with `recording` when the encoder left.",
  },
  LIVESTREAM_RECORDING_READY: { data: SmallStreamEventDataSchema, summary: "The broadcast's recording entered the library as a video." },
  LIVESTREAM_OUTPUT_ACTIVE: { data: OutputEventDataSchema, summary: "A simulcast target took the broadcast (issue 26): `output.status` active." },
  LIVESTREAM_OUTPUT_FAILED: {
    data: OutputEventDataSchema,
    summary: "A simulcast target could not be reached or was lost (once per outage; `output.last_error`): reconnecting with backoff while live, or failed when refused.",
  },
};

/** The body of each delivery: `{event, created_at, data}`. */
export function eventBodySchema(event: EventName) {
  return strictObject({ event: t.Literal(event), created_at: isoTime("When the event happened."), data: EVENT_DATA[event].data });
}

const SIGNATURE_HEADERS = {
  "X-Service-Event": { required: true, description: "The event name.", schema: { type: "string" } },
  "X-Service-Delivery": { required: true, description: "The delivery id, the same on every retry: deduplicate on it.", schema: { type: "string" } },
  "X-Service-Signature": {
    required: true,
    description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the endpoint\'s signing_secret>`. Verify on the raw bytes, within 5 minutes.',
    schema: { type: "string" },
  },
};

/** Where the examples' URLs point: a documentation host, so the document does not depend on PORT or BASE_URL. */
const EXAMPLE_BASE_URL = "https://video.example.com";
const EXAMPLE_TIME = new Date("2030-01-31T18:00:00.000Z");

/**
 * A delivery of `event` as the service sends it: the sample that
 * `POST /webhooks/{id}/test/` sends (the machines' own payloads), with fixed
 * ids. Its own example per event: the `data` schema is shared between
 * events, so an example generated from the schema would show one status
 * (TRANSCODING) for every video event.
 */
export function eventExample(event: EventName) {
  return { event, created_at: EXAMPLE_TIME.toISOString(), data: sampleEventData(event, { baseUrl: EXAMPLE_BASE_URL, now: EXAMPLE_TIME, fixed: true }) };
}

/** OpenAPI 3.1 `webhooks`: one POST per event name, with its body, an example delivery and the signature headers. */
export function webhookEventsDoc(): Record<string, unknown> {
  return Object.fromEntries(
    EVENT_NAMES.map((event) => [
      event,
      {
        post: {
          operationId: `webhook${event
            .toLowerCase()
            .split("_")
            .map((w) => w[0]!.toUpperCase() + w.slice(1))
            .join("")}`,
          summary: event,
          description: `${EVENT_DATA[event].summary} Delivered to endpoints subscribed to \`${event}\`.`,
          tags: ["Webhook events"],
          security: [],
          parameters: Object.entries(SIGNATURE_HEADERS).map(([name, h]) => ({ name, in: "header", ...h })),
          requestBody: { required: true, content: { "application/json": { schema: jsonSchema(eventBodySchema(event)), example: eventExample(event) } } },
          responses: { "200": { description: "Any 2xx acknowledges; anything else (or no answer in 10 s) is retried." } },
        },
      },
    ]),
  );
}
