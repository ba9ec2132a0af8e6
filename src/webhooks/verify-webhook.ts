/**
 * Verifies a webhook delivery on the receiving side: `vidlive/verify-webhook`.
 *
 *   const raw = await request.text(); // the exact bytes: never re-serialise
 *   if (!verifyWebhook({ body: raw, headers: request.headers, secret })) return new Response(null, { status: 400 });
 *
 * The very functions of the SDK (packages/client/src/verify-webhook.ts, which
 * needs only node:crypto and stays standalone), re-exported: one check, one
 * argument form (`{ body, headers, secret }`), so the service, its tests and
 * @vidlive/client cannot drift apart and a receiver cannot swap arguments.
 */
export {
  checkWebhook,
  type RawBody,
  SIGNATURE_HEADER,
  type VerifyOptions,
  type VerifyWebhookInput,
  type WebhookCheck,
  type WebhookHeaders,
  verifyWebhook,
} from "../../packages/client/src/verify-webhook.ts";
