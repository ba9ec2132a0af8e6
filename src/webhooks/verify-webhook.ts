/**
 * Verifies a webhook delivery on the receiving side: `vidlive/verify-webhook`.
 *
 *   const raw = await request.text(); // the exact bytes: never re-serialise
 *   if (!verifyWebhook(secret, request.headers.get("x-service-signature"), raw)) return new Response(null, { status: 400 });
 *
 * The check itself is the SDK's (packages/client/src/verify-webhook.ts, which
 * needs only node:crypto and stays standalone): one implementation, so the
 * service, its tests and @vidlive/client cannot drift apart. This file keeps
 * the argument order this export has always had, `(secret, header, rawBody)`;
 * the SDK's is `(rawBody, headers, secret)`.
 */
import { checkWebhook as checkDelivery, type VerifyOptions, type WebhookCheck } from "../../packages/client/src/verify-webhook.ts";

export type { VerifyOptions, WebhookCheck };

type RawBody = string | Uint8Array | ArrayBuffer;

/** Like `verifyWebhook`, but says why a delivery was refused. */
export function checkWebhook(secret: string, signatureHeader: string | null | undefined, rawBody: RawBody, opts: VerifyOptions = {}): WebhookCheck {
  return checkDelivery(rawBody, signatureHeader, secret, opts);
}

/**
 * True when `signatureHeader` (`X-Service-Signature`, `t=<seconds>,v1=<hex>`)
 * is a valid signature of `rawBody` under `secret` and `t` is within
 * `toleranceSeconds` (default 300) of now. Constant-time comparison.
 */
export function verifyWebhook(secret: string, signatureHeader: string | null | undefined, rawBody: RawBody, opts: VerifyOptions = {}): boolean {
  return checkWebhook(secret, signatureHeader, rawBody, opts).valid;
}
