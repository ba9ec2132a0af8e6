import { sql } from "drizzle-orm";
import type { Tx } from "../db/create-database.ts";

/**
 * The events some live endpoint of an organization subscribes to, read in the
 * transaction that writes the organization's outbox rows. The actor runtime
 * writes an event nobody subscribes to as already fanned out, so the
 * dispatcher never takes the write lock for it: without this, every creation
 * cost a second write transaction (the fan-out's), ~15% of POST /livestreams/
 * (bench/api.ts). Same result as the fan-out: it builds deliveries only for
 * endpoints listing the event, and an endpoint committed after this
 * transaction is registered after the event, so it would not get it either.
 * Server-sent listeners (listen-hub.ts) read the outbox whatever its fan-out.
 */
export async function subscribedEvents(tx: Tx, orgId: string): Promise<ReadonlySet<string>> {
  // The sql template, not the query builder: this runs in every transaction that writes an event.
  const rows = await tx.all<{ events: string }>(sql`SELECT events FROM webhook_endpoints WHERE org_id = ${orgId} AND deleted_at IS NULL`);
  const heard = new Set<string>();
  for (const r of rows) for (const e of JSON.parse(r.events) as string[]) heard.add(e);
  return heard;
}
