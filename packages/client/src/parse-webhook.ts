/** Verify, then parse: a delivery's body as the typed event union. */
import type { WebhookEvent } from "./events.js";
import { checkWebhook, type VerifyWebhookInput } from "./verify-webhook.js";

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  constructor(readonly reason: "missing" | "malformed" | "expired" | "mismatch") {
    super(`Webhook signature refused: ${reason}`);
  }
}

/** Verifies (`{ body, headers, secret }`, as `verifyWebhook`), then parses: the typed event (a union by `event`), or throws `WebhookVerificationError`. */
export function parseWebhook(input: VerifyWebhookInput): WebhookEvent {
  const check = checkWebhook(input);
  if (!check.valid) throw new WebhookVerificationError(check.reason);
  const { body } = input;
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  return JSON.parse(text) as WebhookEvent;
}
