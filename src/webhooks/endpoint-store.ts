import { and, count, eq, inArray, isNull } from "drizzle-orm";
import type { Database, Tx } from "../db/create-database.ts";
import { webhookDeliveries, webhookEndpoints } from "../db/schema/index.ts";
import { newId, randomToken } from "../ids.ts";
import type { SecretCipher } from "../secrets/secret-cipher.ts";
import type { EndpointInput } from "./endpoint-input.ts";
import { EndpointLimitReached } from "./errors.ts";

export type EndpointRow = typeof webhookEndpoints.$inferSelect;

/** What the dispatcher needs to post: never leaves the process, never logged. */
export interface SendableEndpoint {
  id: string;
  orgId: string;
  url: string;
  events: string[];
  fields: string[];
  /** Null when the sealed secret does not open (the server secret changed): attempts then fail. */
  secret: string | null;
  createdAt: number;
}

/** The public record (DESIGN "Webhook endpoint record"): the secret is not part of it. */
export function endpointView(row: EndpointRow) {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    fields: row.fields,
    description: row.description,
    created_at: new Date(row.createdAt).toISOString(),
  };
}

export type EndpointView = ReturnType<typeof endpointView>;

const ENDPOINT_COLUMNS = "id, org_id, url, events, fields, description, sealed_secret, created_at, deleted_at";

/** A raw row (ENDPOINT_COLUMNS, in order) as drizzle maps it (JSON columns parsed). */
function endpointRowOf(r: unknown[]): EndpointRow {
  return {
    id: r[0] as string,
    orgId: r[1] as string,
    url: r[2] as string,
    events: JSON.parse(r[3] as string),
    fields: JSON.parse(r[4] as string),
    description: (r[5] as string | null) ?? null,
    sealedSecret: r[6] as string,
    createdAt: Number(r[7]),
    deletedAt: r[8] === null || r[8] === undefined ? null : Number(r[8]),
  };
}

export const DEFAULT_ENDPOINTS_PER_ORG = 20;

/**
 * Endpoints of one organization; another organization's ids are simply absent.
 * `maxPerOrg` (WEBHOOK_ENDPOINTS_PER_ORG): live endpoints one organization may
 * have, so no organization can multiply the dispatcher's work without bound.
 */
export function createEndpointStore(deps: { database: Database; cipher: SecretCipher; maxPerOrg?: number }) {
  const { database, cipher } = deps;
  const maxPerOrg = deps.maxPerOrg ?? DEFAULT_ENDPOINTS_PER_ORG;
  const live = (orgId: string, id: string) => and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.orgId, orgId), isNull(webhookEndpoints.deletedAt));

  function openSecret(row: EndpointRow): string | null {
    try {
      return cipher.open(row.sealedSecret, row.id);
    } catch {
      return null;
    }
  }

  async function readOne(orgId: string, id: string): Promise<EndpointRow | null> {
    const r = await database.hot.get(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND org_id = ? AND deleted_at IS NULL LIMIT 1`, [id, orgId]);
    return r ? endpointRowOf(r) : null;
  }

  async function readPage(orgId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }): Promise<EndpointRow[]> {
    const c = page.cursor;
    const rows = c
      ? await database.hot.all(
          `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = ? AND deleted_at IS NULL AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?`,
          [orgId, c.createdAt, c.createdAt, c.id, page.limit],
        )
      : await database.hot.all(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ?`, [orgId, page.limit]);
    return rows.map(endpointRowOf);
  }

  /**
   * The secret is opened when first read (signing a delivery), not here: every
   * fan-out reads its organizations' endpoints, and opening all of their
   * secrets for events none of them subscribed to was ~3% of the CPU of
   * POST /livestreams/ under load with 20 endpoints (bench/api.ts profile).
   */
  function sendable(row: EndpointRow): SendableEndpoint {
    let secret: string | null | undefined;
    return {
      id: row.id,
      orgId: row.orgId,
      url: row.url,
      events: row.events,
      fields: row.fields,
      createdAt: row.createdAt,
      get secret() {
        if (secret === undefined) secret = openSecret(row);
        return secret;
      },
    };
  }

  return {
    /**
     * Registers an endpoint. Counted and inserted in one write transaction, so
     * concurrent registrations cannot pass the cap together: over it,
     * EndpointLimitReached (422 VALIDATION_ERROR with `details.endpoints`).
     */
    async create(orgId: string, input: EndpointInput): Promise<{ row: EndpointRow; signingSecret: string }> {
      const id = newId("whk");
      const signingSecret = `whsec_${randomToken(32)}`;
      const row: EndpointRow = { id, orgId, ...input, sealedSecret: cipher.seal(signingSecret, id), createdAt: Date.now(), deletedAt: null };
      await database.write(async (tx) => {
        const [live] = await tx
          .select({ n: count() })
          .from(webhookEndpoints)
          .where(and(eq(webhookEndpoints.orgId, orgId), isNull(webhookEndpoints.deletedAt)));
        if ((live?.n ?? 0) >= maxPerOrg) {
          throw new EndpointLimitReached(maxPerOrg);
        }
        await tx.insert(webhookEndpoints).values(row);
      });
      return { row, signingSecret };
    },

    /** A cached prepared statement on a `file:` database (database.hot): GET /webhooks/{id}/ is on the API's read path. */
    get(orgId: string, id: string): Promise<EndpointRow | null> {
      return database.cache.read(`endpoint:${orgId}:${id}`, () => readOne(orgId, id));
    },

    /** Newest first, keyset-paginated on (created_at, id): one range of webhook_endpoints_org; kept while the database is unchanged (src/db/read-cache.ts). */
    list(orgId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }): Promise<EndpointRow[]> {
      const c = page.cursor;
      return database.cache.read(`endpoints:${orgId}:${page.limit}:${c ? `${c.createdAt}:${c.id}` : ""}`, () => readPage(orgId, page));
    },

    /**
     * Removes an endpoint and, in the same transaction, drops every delivery
     * still pending for it (their count is returned). Null when the
     * organization has no such endpoint.
     */
    async remove(orgId: string, id: string): Promise<{ dropped: number } | null> {
      return database.write(async (tx) => {
        const now = Date.now();
        const done = await tx.update(webhookEndpoints).set({ deletedAt: now }).where(live(orgId, id)).returning({ id: webhookEndpoints.id });
        if (done.length === 0) return null;
        const dropped = await tx
          .update(webhookDeliveries)
          .set({ status: "dropped", nextAttemptAt: null, updatedAt: now })
          .where(and(eq(webhookDeliveries.endpointId, id), eq(webhookDeliveries.status, "pending")))
          .returning({ id: webhookDeliveries.id });
        return { dropped: dropped.length };
      });
    },

    /** Live endpoints of these organizations, secrets opened (inside the fan-out transaction). */
    async activeFor(tx: Tx, orgIds: string[]): Promise<SendableEndpoint[]> {
      if (orgIds.length === 0) return [];
      const rows = await tx
        .select()
        .from(webhookEndpoints)
        .where(and(inArray(webhookEndpoints.orgId, orgIds), isNull(webhookEndpoints.deletedAt)));
      return rows.map(sendable);
    },

    /** Live endpoints by id, secrets opened; deleted or unknown ids are absent. */
    async sendableByIds(ids: string[]): Promise<SendableEndpoint[]> {
      if (ids.length === 0) return [];
      const rows = await database.db
        .select()
        .from(webhookEndpoints)
        .where(and(inArray(webhookEndpoints.id, ids), isNull(webhookEndpoints.deletedAt)));
      return rows.map(sendable);
    },
  };
}

export type EndpointStore = ReturnType<typeof createEndpointStore>;
