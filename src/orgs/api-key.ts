import { randomToken } from "../ids.ts";

/** `sk_live_<prefix>_<secret>`: the prefix finds the row, the secret proves possession. */
const KEY_PATTERN = /^sk_live_([0-9A-Za-z]{12})_([0-9A-Za-z]{32})$/;

export interface ParsedKey {
  prefix: string;
  secret: string;
}

export function generateApiKey(): { key: string; prefix: string; secretHash: string } {
  const prefix = randomToken(12);
  const secret = randomToken(32);
  return { key: `sk_live_${prefix}_${secret}`, prefix, secretHash: hashSecret(secret) };
}

export function parseApiKey(raw: string | null | undefined): ParsedKey | null {
  if (!raw) return null;
  const m = KEY_PATTERN.exec(raw);
  return m ? { prefix: m[1]!, secret: m[2]! } : null;
}

/**
 * The secret is 190 random bits, so a fast hash is enough: no dictionary to
 * defend against, and a slow KDF would make every API call pay for it.
 */
export function hashSecret(secret: string): string {
  return Bun.SHA256.hash(secret, "hex");
}

/**
 * Constant-time after a length check: every character is compared whatever
 * the first difference, with no early exit. A string loop instead of
 * crypto.timingSafeEqual saves two Buffer allocations on every API call.
 */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export function secretMatches(secret: string, storedHash: string): boolean {
  return constantTimeEqual(hashSecret(secret), storedHash);
}

/** Burned on unknown prefixes so a miss costs about what a hit costs. */
export const DUMMY_HASH = hashSecret("0".repeat(32));
