import type { webhooks } from "./schema.js";

/** Every event name the service sends (spec section 6). */
export type WebhookEventName = keyof webhooks;

/** The body of a delivery of `E`: `{event, created_at, data}`, `data` as the service builds it. */
export type WebhookEventOf<E extends WebhookEventName> = webhooks[E]["post"] extends { requestBody: { content: { "application/json": infer B } } } ? B : never;

/**
 * Any delivery, a union discriminated by `event`: `if (e.event === "VIDEO_TRANSCODING_COMPLETED") e.data.video.url`.
 * An endpoint registered with `fields` receives `data` trimmed to those paths.
 */
export type WebhookEvent = { [E in WebhookEventName]: WebhookEventOf<E> }[WebhookEventName];

/**
 * The event names, in the order of the reference. The one list: the service
 * takes it from here (src/webhooks/event-names.ts) because this package must
 * build on its own and cannot import the service.
 */
export const WEBHOOK_EVENT_NAMES = [
  "VIDEO_UPLOADED",
  "VIDEO_TRANSCODING_STARTED",
  "VIDEO_PLAYABLE",
  "VIDEO_TRANSCODING_COMPLETED",
  "VIDEO_TRANSCODING_FAILED",
  "LIVESTREAM_SCHEDULED",
  "LIVESTREAM_STARTED",
  "LIVESTREAM_ENDED",
  "LIVESTREAM_RECORDING_READY",
  "LIVESTREAM_OUTPUT_ACTIVE",
  "LIVESTREAM_OUTPUT_FAILED",
] as const satisfies readonly WebhookEventName[];

/** Fails to compile when the document names an event the list above lacks (`satisfies` checks the other direction). */
type Complete<Missing extends never> = Missing;
type EveryEventListed = Complete<Exclude<WebhookEventName, (typeof WEBHOOK_EVENT_NAMES)[number]>>;
