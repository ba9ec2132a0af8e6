import type { OrgStore, Organization } from "../orgs/org-store.ts";
import { DUMMY_HASH, parseApiKey, secretMatches } from "../orgs/api-key.ts";

export interface AuthContext {
  org: Organization;
  keyId: string;
  /** The per-key request limit's check (`key:<id>`), built once per key row. */
  keyCheck: { key: string; limit: number };
}

/**
 * One context per cached key row: the read cache hands out the same row while
 * the database is unchanged (a revocation or a settings change is a commit, so
 * a new row), and a request then reuses its context and limit key instead of
 * building them (the limiter hashes a string it has seen before).
 */
const contexts = new WeakMap<object, AuthContext>();

/** `Authorization: Bearer <key>` or `X-API-Key: <key>`. */
export function extractKey(headers: Headers): string | null {
  const auth = headers.get("authorization");
  if (auth) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return m ? m[1]! : null;
  }
  return headers.get("x-api-key");
}

/**
 * Resolves a request's key to its organization, or null for every kind of
 * failure alike (missing, malformed, unknown, revoked, expired). A database
 * read on every call, deliberately: revocation must be effective at once.
 */
export async function authenticate(orgs: OrgStore, headers: Headers, now = Date.now()): Promise<AuthContext | null> {
  const parsed = parseApiKey(extractKey(headers));
  if (!parsed) return null;
  const row = await orgs.findKey(parsed.prefix);
  const matches = secretMatches(parsed.secret, row?.secretHash ?? DUMMY_HASH);
  if (!row || !matches) return null;
  if (row.revokedAt !== null) return null;
  if (row.expiresAt !== null && row.expiresAt <= now) return null;
  orgs.noteKeyUse(row.keyId, now);
  let ctx = contexts.get(row);
  if (!ctx) {
    ctx = { org: row.org, keyId: row.keyId, keyCheck: { key: `key:${row.keyId}`, limit: row.org.settings.limits.requestsPerMinute } };
    contexts.set(row, ctx);
  }
  return ctx;
}
