/**
 * Verifies a webhook delivery on the receiving side. Self-contained (only
 * node:crypto, which Bun, Node and Deno provide) so a receiver can import it
 * from `vidlive/verify-webhook` or copy this file as is.
 *
 *   const raw = await request.text(); // the exact bytes: never re-serialise
 *   if (!verifyWebhook(secret, request.headers.get("x-service-signature"), raw)) return new Response(null, { status: 400 });
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export interface VerifyOptions {
  /** Maximum age (and clock skew into the future) of `t`, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** For tests: the current time in seconds. */
  nowSeconds?: number;
}

export type WebhookCheck = { valid: true; timestamp: number } | { valid: false; reason: "missing" | "malformed" | "expired" | "mismatch" };

const HEX_DIGEST = /^[0-9a-f]{64}$/;

function bytesOf(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === "string") return new TextEncoder().encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

/** Like `verifyWebhook`, but says why a delivery was refused. */
export function checkWebhook(secret: string, signatureHeader: string | null | undefined, rawBody: string | Uint8Array | ArrayBuffer, opts: VerifyOptions = {}): WebhookCheck {
  if (!signatureHeader) return { valid: false, reason: "missing" };
  let t: string | undefined;
  const candidates: string[] = [];
  for (const part of signatureHeader.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") t = value;
    else if (key === "v1") candidates.push(value);
  }
  if (t === undefined || !/^\d{1,12}$/.test(t) || candidates.length === 0) return { valid: false, reason: "malformed" };
  const timestamp = Number(t);
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (opts.toleranceSeconds ?? 300)) return { valid: false, reason: "expired" };

  const expected = createHmac("sha256", secret).update(`${t}.`).update(bytesOf(rawBody)).digest();
  for (const candidate of candidates) {
    // Length (and alphabet) first: timingSafeEqual needs equal lengths, and a
    // wrong length says nothing about the secret.
    if (!HEX_DIGEST.test(candidate)) continue;
    const given = Buffer.from(candidate, "hex");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { valid: true, timestamp };
  }
  return { valid: false, reason: "mismatch" };
}

/**
 * True when `signatureHeader` (`X-Service-Signature`, `t=<seconds>,v1=<hex>`)
 * is a valid signature of `rawBody` under `secret` and `t` is within
 * `toleranceSeconds` (default 300) of now. Constant-time comparison.
 */
export function verifyWebhook(secret: string, signatureHeader: string | null | undefined, rawBody: string | Uint8Array | ArrayBuffer, opts: VerifyOptions = {}): boolean {
  return checkWebhook(secret, signatureHeader, rawBody, opts).valid;
}
