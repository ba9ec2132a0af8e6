/** Verify, then parse: a delivery's body as the typed event union. */
import type { WebhookEvent } from "./events.js";
import { checkWebhook, type RawBody, type VerifyOptions, type WebhookHeaders } from "./verify-webhook.js";

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  constructor(readonly reason: "missing" | "malformed" | "expired" | "mismatch") {
    super(`Webhook signature refused: ${reason}`);
  }
}

/** Verifies, then parses: the typed event (a union by `event`), or throws `WebhookVerificationError`. */
export function parseWebhook(rawBody: RawBody, headers: WebhookHeaders, secret: string, opts: VerifyOptions = {}): WebhookEvent {
  const check = checkWebhook(rawBody, headers, secret, opts);
  if (!check.valid) throw new WebhookVerificationError(check.reason);
  const text = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  return JSON.parse(text) as WebhookEvent;
}
