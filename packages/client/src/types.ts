import type { components } from "./schema.js";

type Schemas = components["schemas"];

/** A video as GET /videos/{id}/ answers it (`video`, `renditions`, `error`, `storage`, `stream`). */
export type Video = Schemas["Video"];
/** `data` of the VIDEO_* events. */
export type VideoEventData = Schemas["VideoEventData"];
export type Rendition = Schemas["Rendition"];
/** POST /videos/upload-url/'s answer. */
export type UploadSlot = Schemas["UploadSlot"];
export type DrmToken = Schemas["DrmToken"];
/** A live stream as GET /livestreams/{id}/ answers it. */
export type Stream = Schemas["Stream"];
export type Recording = Schemas["Recording"];
export type Organization = Schemas["Organization"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type WebhookDelivery = Schemas["WebhookDelivery"];
export type WebhookAttempt = Schemas["WebhookAttempt"];
/** The error envelope: `error.code` is one of the API's codes. */
export type ApiErrorBody = Schemas["ErrorEnvelope"];
