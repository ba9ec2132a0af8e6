import { and, desc, eq, isNotNull, isNull, lte, sql } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import type { ChangeFeed } from "../db/change-feed.ts";
import { apiKeys, organizations } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import { coalesceReads } from "../db/coalesced-reads.ts";
import { generateApiKey } from "./api-key.ts";
import { ApiKeyExists, OrgNotFound } from "./errors.ts";
import { defaultOrgSettings, normalizeSettings, type OrgSettings } from "./org-settings.ts";

export interface Organization {
  id: string;
  name: string;
  settings: OrgSettings;
  createdAt: number;
}

export interface AuthRow {
  keyId: string;
  secretHash: string;
  revokedAt: number | null;
  expiresAt: number | null;
  org: Organization;
}

/** What an operator may see of a key again: never the secret nor its hash (spec 2.2: the prefix is the only part shown again). */
export interface KeyInfo {
  prefix: string;
  name: string;
  status: "live" | "expired" | "revoked";
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  /** Last authenticated request, to the minute (null: never used). */
  lastUsedAt: number | null;
}

/** Expired wins over revoked when a key was retired because it had expired (key create does that). */
export function keyStatus(k: { revokedAt: number | null; expiresAt: number | null }, now = Date.now()): KeyInfo["status"] {
  if (k.expiresAt !== null && k.expiresAt <= (k.revokedAt ?? now)) return "expired";
  return k.revokedAt !== null ? "revoked" : "live";
}

const FIND_KEY_SQL =
  "SELECT k.id, k.secret_hash, k.revoked_at, k.expires_at, o.id, o.name, o.settings, o.created_at FROM api_keys k JOIN organizations o ON o.id = k.org_id WHERE k.prefix = ? LIMIT 1";
/**
 * On a server: the rows of every prefix of a batch (a JSON array; none found: one row of NULLs) after the change
 * counter, in one statement, so the concurrent requests of a process cost one round trip (coalesced-reads.ts,
 * change-feed.ts).
 */
const FIND_KEYS_FRESH_SQL =
  "SELECT cv.v, k.prefix, k.id, k.secret_hash, k.revoked_at, k.expires_at, o.id, o.name, o.settings, o.created_at FROM change_version cv LEFT JOIN api_keys k ON k.prefix IN (SELECT value FROM json_each(?)) LEFT JOIN organizations o ON o.id = k.org_id WHERE cv.id = 1";

/**
 * Parsed settings by their stored JSON text. The row is still read on every
 * request (a change is seen at once); only re-parsing identical text is skipped.
 */
const parsedSettings = new Map<string, OrgSettings>();
function parseSettings(raw: string): OrgSettings {
  let s = parsedSettings.get(raw);
  if (!s) {
    if (parsedSettings.size > 10_000) parsedSettings.clear();
    s = normalizeSettings(JSON.parse(raw));
    parsedSettings.set(raw, s);
  }
  return s;
}

/** `last_used_at` is written at most this often per key: a write per request would cost the hot path a queued write. */
export const KEY_USE_WRITE_EVERY_MS = 60_000;

export function createOrgStore(database: Database) {
  const { db } = database;
  /** Per key id, when this process last wrote its last_used_at. */
  const lastUseWrite = new Map<string, number>();
  const feed = database.feed;
  const freshKeys = feed ? coalesceReads((prefixes: string[]) => readKeysFresh(prefixes, feed)) : null;

  async function getOrg(id: string): Promise<Organization | null> {
    const row = await db.query.organizations.findFirst({ where: eq(organizations.id, id) });
    return row ? { id: row.id, name: row.name, settings: normalizeSettings(row.settings), createdAt: row.createdAt } : null;
  }

  async function mustGetOrg(id: string): Promise<Organization> {
    const org = await getOrg(id);
    if (!org) throw new OrgNotFound(id);
    return org;
  }

  /**
   * Creates a key, or throws ApiKeyExists while the organization still has a
   * live one. An expired key is not live: it is retired (`revoked_at` set) in
   * the same transaction, which also frees the "one live key" unique index.
   */
  async function createKey(orgId: string, name = "default", opts: { expiresAt?: number } = {}): Promise<{ apiKey: string; prefix: string }> {
    await mustGetOrg(orgId);
    const { key, prefix, secretHash } = generateApiKey();
    await database.write(async (tx) => {
      const now = Date.now();
      await tx
        .update(apiKeys)
        .set({ revokedAt: now })
        .where(and(eq(apiKeys.orgId, orgId), isNull(apiKeys.revokedAt), isNotNull(apiKeys.expiresAt), lte(apiKeys.expiresAt, now)));
      const live = await tx
        .select({ id: apiKeys.id })
        .from(apiKeys)
        .where(and(eq(apiKeys.orgId, orgId), isNull(apiKeys.revokedAt)))
        .limit(1);
      if (live.length > 0) throw new ApiKeyExists();
      await tx.insert(apiKeys).values({ id: newId("key"), orgId, prefix, secretHash, name, createdAt: now, expiresAt: opts.expiresAt ?? null });
    });
    return { apiKey: key, prefix };
  }

  /** The organization's keys, newest first, as an operator may see them again. */
  async function listKeys(orgId: string): Promise<KeyInfo[]> {
    await mustGetOrg(orgId);
    const rows = await db
      .select({ prefix: apiKeys.prefix, name: apiKeys.name, createdAt: apiKeys.createdAt, expiresAt: apiKeys.expiresAt, revokedAt: apiKeys.revokedAt, lastUsedAt: apiKeys.lastUsedAt })
      .from(apiKeys)
      .where(eq(apiKeys.orgId, orgId))
      // Newest first; keys made in the same millisecond (a rotation) by insertion order, not by their random ids.
      .orderBy(desc(apiKeys.createdAt), desc(sql`rowid`));
    const now = Date.now();
    return rows.map((r) => ({ ...r, status: keyStatus(r, now) }));
  }

  /**
   * Records that a key authenticated a request: at most one write a minute per
   * key (per process), fire-and-forget; a failed write is only a stale
   * "last used" on the settings screen, never a failed request.
   */
  function noteKeyUse(keyId: string, now = Date.now()): void {
    if ((lastUseWrite.get(keyId) ?? Number.NEGATIVE_INFINITY) + KEY_USE_WRITE_EVERY_MS > now) return;
    if (lastUseWrite.size > 10_000) lastUseWrite.clear();
    lastUseWrite.set(keyId, now);
    database.write((tx) => tx.update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, keyId))).catch(() => {});
  }

  return {
    getOrg,
    mustGetOrg,
    createKey,
    listKeys,
    noteKeyUse,

    async createOrg(name: string, settings: OrgSettings = defaultOrgSettings()): Promise<{ org: Organization; apiKey: string }> {
      const org: Organization = { id: newId("org"), name, settings, createdAt: Date.now() };
      await database.write((tx) => tx.insert(organizations).values(org));
      const { apiKey } = await createKey(org.id);
      return { org, apiKey };
    },

    async hasAnyOrg(): Promise<boolean> {
      const rows = await db.select({ id: organizations.id }).from(organizations).limit(1);
      return rows.length > 0;
    },

    async listOrgs(): Promise<Organization[]> {
      const rows = await db.select().from(organizations);
      return rows.map((r) => ({ ...r, settings: normalizeSettings(r.settings) }));
    },

    async updateSettings(orgId: string, update: (s: OrgSettings) => OrgSettings): Promise<Organization> {
      return database.write(async (tx) => {
        const row = await tx.select().from(organizations).where(eq(organizations.id, orgId)).limit(1);
        if (!row[0]) throw new OrgNotFound(orgId);
        const settings = update(normalizeSettings(row[0].settings));
        await tx.update(organizations).set({ settings }).where(eq(organizations.id, orgId));
        return { id: row[0].id, name: row[0].name, createdAt: row[0].createdAt, settings };
      });
    },

    /** Returns how many live keys were revoked (0 when there was none; an expired key is retired too). */
    async revokeKey(orgId: string): Promise<number> {
      await mustGetOrg(orgId);
      return database.write(async (tx) => {
        const res = await tx
          .update(apiKeys)
          .set({ revokedAt: Date.now() })
          .where(and(eq(apiKeys.orgId, orgId), isNull(apiKeys.revokedAt)))
          .returning({ expiresAt: apiKeys.expiresAt });
        const now = Date.now();
        return res.filter((k) => k.expiresAt === null || k.expiresAt > now).length;
      });
    },

    /**
     * Revocation is effective on the next call (spec 5.5: no propagation delay).
     * On a file the row is kept only while the database is unchanged
     * (src/db/read-cache.ts: the WAL-index header compared on every request); a
     * revocation or a settings change, from any process, is a commit, so the next
     * request reads it again. The read itself is a cached prepared statement: this
     * runs on every API call, and drizzle's query building cost more than the read
     * (bench/api.ts). On a server the key is read on every call, and the same
     * round trip reads the change counter, so every cached read of the request
     * (actors, endpoints) is the database's answer as of its start (change-feed.ts). The lookups of the requests
     * that arrive together share that round trip (one statement, coalesced-reads.ts); a request never joins a
     * statement already sent, so the next call after a revocation still reads after it.
     */
    findKey(prefix: string): Promise<AuthRow | null> {
      if (!freshKeys) return database.cache.read(`key:${prefix}`, () => readKey(prefix));
      return freshKeys.load(prefix).then((row) => row ?? null);
    },
    /** On a server: key-lookup statements sent so far (one per batch of concurrent requests); 0 on a file. */
    keyLookups: () => freshKeys?.batches ?? 0,
  };

  async function readKey(prefix: string): Promise<AuthRow | null> {
    const r = await database.hot.get(FIND_KEY_SQL, [prefix]);
    return r ? authRow(r) : null;
  }

  async function readKeysFresh(prefixes: string[], feed: ChangeFeed): Promise<Map<string, AuthRow>> {
    const started = performance.now();
    const rows = await database.hot.all(FIND_KEYS_FRESH_SQL, [JSON.stringify(prefixes)]);
    const found = new Map<string, AuthRow>();
    if (rows[0]) feed.observe(Number(rows[0][0]), started);
    for (const r of rows) if (r[1] !== null) found.set(r[1] as string, authRow(r.slice(2)));
    return found;
  }

  function authRow(r: unknown[]): AuthRow {
    return {
      keyId: r[0] as string,
      secretHash: r[1] as string,
      revokedAt: (r[2] as number | null) ?? null,
      expiresAt: (r[3] as number | null) ?? null,
      org: { id: r[4] as string, name: r[5] as string, settings: parseSettings(r[6] as string), createdAt: Number(r[7]) },
    };
  }
}

export type OrgStore = ReturnType<typeof createOrgStore>;
