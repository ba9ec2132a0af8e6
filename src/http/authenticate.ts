import type { OrgStore, Organization } from "../orgs/org-store.ts";
import { DUMMY_HASH, parseApiKey, secretMatches } from "../orgs/api-key.ts";

export interface AuthContext {
  org: Organization;
  keyId: string;
}

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
  return { org: row.org, keyId: row.keyId };
}
