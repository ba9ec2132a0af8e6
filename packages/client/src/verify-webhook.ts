/**
 * Webhook signatures, as the service makes them (src/webhooks/sign.ts) and
 * checks them (src/webhooks/verify-webhook.ts): `X-Service-Signature:
 * t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 of "<t>.<raw body>">`, keyed
 * with the endpoint's signing secret (its UTF-8 bytes). Constant-time
 * comparison (node:crypto `timingSafeEqual`), `t` within `toleranceSeconds`.
 *
 * The one implementation of the check: the service's `vidlive/verify-webhook`
 * (src/webhooks/verify-webhook.ts) re-exports these very functions. One
 * argument, an object (`{ body, headers, secret }`): the three are strings
 * more often than not, and an object is the one form a mix-up cannot take. Needs only node:crypto (Bun,
 * Node, Deno), so a receiver may also copy this file as is; `parseWebhook`
 * lives in parse-webhook.ts for that reason (it needs the event types).
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export interface VerifyOptions {
  /** Maximum age (and clock skew into the future) of `t`, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** For tests: the current time in seconds. */
  nowSeconds?: number;
}

/** A Fetch `Headers`, Node's `IncomingHttpHeaders` (`req.headers`), a plain object, or the signature header itself. */
export type WebhookHeaders = { get(name: string): string | null } | Record<string, string | string[] | undefined> | string | null | undefined;

export type RawBody = string | Uint8Array | ArrayBuffer;

export type WebhookCheck = { valid: true; timestamp: number } | { valid: false; reason: "missing" | "malformed" | "expired" | "mismatch" };

export const SIGNATURE_HEADER = "x-service-signature";

const HEX_DIGEST = /^[0-9a-f]{64}$/;

function signatureOf(headers: WebhookHeaders): string | undefined {
  if (headers == null) return undefined;
  if (typeof headers === "string") return headers;
  if (typeof (headers as { get?: unknown }).get === "function") return (headers as { get(name: string): string | null }).get(SIGNATURE_HEADER) ?? undefined;
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (name.toLowerCase() === SIGNATURE_HEADER) return Array.isArray(value) ? value.join(",") : value;
  }
  return undefined;
}

function bytesOf(body: RawBody): Uint8Array {
  if (typeof body === "string") return new TextEncoder().encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

/**
 * What a check needs, by name: one object, so the body, the headers and the
 * secret cannot be passed in the wrong order (they are all strings).
 */
export interface VerifyWebhookInput extends VerifyOptions {
  /** The request body exactly as received (never re-serialised JSON): string, `Uint8Array`/`Buffer` or `ArrayBuffer`. */
  body: RawBody;
  /** The request's headers (Fetch `Headers`, Node's `req.headers`, a plain object), or the `X-Service-Signature` value itself. */
  headers: WebhookHeaders;
  /** The endpoint's `signing_secret` (`whsec_…`), or the one `cli listen` printed. */
  secret: string;
}

/** A call in the old positional form, or without a secret, is a programming error: said at once, never a silent `false`. */
function inputOf(input: VerifyWebhookInput, name: string): VerifyWebhookInput {
  if (typeof input !== "object" || input === null || !("body" in input) || !("headers" in input) || !("secret" in input))
    throw new TypeError(`${name} takes one object: ${name}({ body, headers, secret })`);
  if (typeof input.secret !== "string" || input.secret === "") throw new TypeError(`${name}: secret must be a non-empty string (the endpoint's signing_secret)`);
  return input;
}

/** Like `verifyWebhook`, but says why a delivery was refused. */
export function checkWebhook(input: VerifyWebhookInput): WebhookCheck {
  const { body, headers, secret, ...opts } = inputOf(input, "checkWebhook");
  return check(body, headers, secret, opts);
}

function check(rawBody: RawBody, headers: WebhookHeaders, secret: string, opts: VerifyOptions): WebhookCheck {
  const header = signatureOf(headers);
  if (!header) return { valid: false, reason: "missing" };
  let t: string | undefined;
  const candidates: string[] = [];
  for (const part of header.split(",")) {
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
    // Length and alphabet first: timingSafeEqual needs equal lengths, and a wrong length says nothing about the secret.
    if (!HEX_DIGEST.test(candidate)) continue;
    const given = Buffer.from(candidate, "hex");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { valid: true, timestamp };
  }
  return { valid: false, reason: "mismatch" };
}

/**
 * True when the delivery's `X-Service-Signature` (found in `headers`) is a
 * valid signature of `body` under `secret`, made within `toleranceSeconds`
 * (default 300) of now:
 *
 *   verifyWebhook({ body: raw, headers: request.headers, secret: process.env.WEBHOOK_SECRET! })
 *
 * Pass the raw bytes as received: never re-serialised JSON.
 */
export function verifyWebhook(input: VerifyWebhookInput): boolean {
  const { body, headers, secret, ...opts } = inputOf(input, "verifyWebhook");
  return check(body, headers, secret, opts).valid;
}
