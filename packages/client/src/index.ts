/** @vidlive/client: the typed API client, webhook verification and the event payload types. */
export { createClient, type VidliveClient, type VidliveClientOptions } from "./client.js";
export { WEBHOOK_EVENT_NAMES, type WebhookEvent, type WebhookEventName, type WebhookEventOf } from "./events.js";
export type { components, operations, paths, webhooks } from "./schema.js";
export type {
  ApiErrorBody,
  DrmToken,
  Organization,
  Recording,
  Rendition,
  Stream,
  UploadSlot,
  Video,
  VideoEventData,
  WebhookAttempt,
  WebhookDelivery,
  WebhookEndpoint,
} from "./types.js";
export { parseWebhook, WebhookVerificationError } from "./parse-webhook.js";
export {
  checkWebhook,
  type RawBody,
  SIGNATURE_HEADER,
  type VerifyOptions,
  type VerifyWebhookInput,
  type WebhookCheck,
  type WebhookHeaders,
  verifyWebhook,
} from "./verify-webhook.js";
export { type HlsLike, type PlaybackTracker, type ShakaLike, type TrackPlaybackOptions, trackPlayback } from "./track-playback.js";
