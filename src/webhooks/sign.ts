import { createHmac } from "node:crypto";

/**
 * `X-Service-Signature: t=<seconds>,v1=<hex>` (spec 5): lowercase hex
 * HMAC-SHA256, keyed with the endpoint's signing secret (its UTF-8 bytes), of
 * `<t>.<raw body>`. Each attempt signs with its own `t`; the body never changes.
 */
export function signatureHeader(secret: string, body: string, timestampSeconds: number): string {
  const t = Math.floor(timestampSeconds);
  const v1 = createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");
  return `t=${t},v1=${v1}`;
}
