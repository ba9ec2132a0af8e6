import { and, asc, desc, eq, gt, inArray, isNull, lte, min, ne, notInArray, or, sql } from "drizzle-orm";
import { createOutbox, type Outbox, type OutboxRow } from "../outbox/outbox.ts";
import { olderThan } from "../db/keyset.ts";
import type { Database } from "../db/create-database.ts";
import { webhookAttempts, webhookDeliveries } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import type { Logger } from "../log.ts";
import { type EventSealer, plainEvents } from "../secrets/event-sealer.ts";
import { chunks, renewLeases, type Claim } from "../work/lease.ts";

export type { Claim };
import type { EndpointStore, SendableEndpoint } from "./endpoint-store.ts";
import { filterFields } from "./fields-filter.ts";

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof webhookAttempts.$inferSelect;

/** What one attempt's result does to its delivery. */
export type AttemptVerdict =
  | { kind: "delivered" }
  /** `hold`: the process keeps the delivery (and its lease) while it waits; otherwise the lease is released. */
  | { kind: "retry"; at: number; hold: boolean }
  | { kind: "abandoned" }
  /** A manual re-send that failed: the delivery keeps its status and schedule. */
  | { kind: "unchanged" };

export interface AttemptResult {
  deliveryId: string;
  manual: boolean;
  startedAt: number;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  verdict: AttemptVerdict;
}

/** Pending, due by `now`, and held by nobody (never claimed, released, or the lease ran out). */
const claimable = (now: number) =>
  and(eq(webhookDeliveries.status, "pending"), lte(webhookDeliveries.nextAttemptAt, now), or(isNull(webhookDeliveries.leaseUntil), lte(webhookDeliveries.leaseUntil, now)));

/** The envelope of spec 2.4, serialised once: these bytes are what every attempt sends. */
export function deliveryBody(event: string, createdAt: number, data: Record<string, unknown>, fields: readonly string[]): string {
  return JSON.stringify({ event, created_at: new Date(createdAt).toISOString(), data: filterFields(data, fields) });
}

/**
 * The dispatcher's durable state: turning outbox rows into deliveries,
 * recording attempts (many per transaction), and claiming what is due.
 */
export function createDeliveryStore(deps: { database: Database; endpoints: EndpointStore; events?: EventSealer; outbox?: Outbox; logger?: Logger }) {
  const { database, endpoints } = deps;
  const sealer = deps.events ?? plainEvents;
  const outbox = deps.outbox ?? createOutbox({ database, events: sealer });
  /** The stored form of deliveries (bodies sealed), and rows read back with their bodies opened. */
  const storedOf = (d: DeliveryRow): DeliveryRow => ({ ...d, body: sealer.sealBody(d.body, d.id) });
  const opened = (d: DeliveryRow): DeliveryRow => ({ ...d, body: sealer.openBody(d.body, d.id) });
  function openedPayload(row: OutboxRow): Record<string, unknown> | null {
    try {
      return outbox.open(row);
    } catch (err) {
      deps.logger?.error("Cannot open an event's payload; it is not delivered", { event_id: row.id, org_id: row.orgId, entity_id: row.entityId, err });
      return null;
    }
  }

  function newDelivery(endpoint: SendableEndpoint, eventId: string, event: string, body: string, now: number, test: boolean, claim: Claim | null): DeliveryRow {
    return {
      id: newId("dlv"),
      endpointId: endpoint.id,
      orgId: endpoint.orgId,
      eventId,
      event,
      body,
      test,
      status: "pending",
      attempts: 0,
      nextAttemptAt: now,
      claimedBy: claim?.by ?? null,
      leaseUntil: claim?.until ?? null,
      createdAt: now,
      updatedAt: now,
    };
  }

  return {
    /**
     * One transaction: takes up to `limit` outbox rows not yet fanned out,
     * builds one delivery per subscribed endpoint (id fixed, payload trimmed by
     * the endpoint's `fields` now), inserts them and marks the rows. A crash
     * before the commit leaves the rows for the next run; after it, the
     * deliveries exist, already held by `claim` (the process that built them
     * sends them). Endpoints registered after an event do not get it.
     */
    async fanOut(limit: number, claim: Claim): Promise<{ deliveries: DeliveryRow[]; endpoints: SendableEndpoint[]; events: number }> {
      // A read first: an idle poll should not take the write lock.
      if (!(await outbox.hasPending())) return { deliveries: [], endpoints: [], events: 0 };
      return database.write(async (tx) => {
        const rows = await outbox.readAfter(0, { pending: true, limit, tx });
        if (rows.length === 0) return { deliveries: [], endpoints: [], events: 0 };
        const now = Date.now();
        const active = await endpoints.activeFor(tx, [...new Set(rows.map((r) => r.orgId))]);
        const deliveries: DeliveryRow[] = [];
        for (const row of rows) {
          let data: Record<string, unknown> | null | undefined;
          for (const ep of active) {
            if (ep.orgId !== row.orgId || ep.createdAt > row.createdAt || !ep.events.includes(row.event)) continue;
            data ??= openedPayload(row);
            // Unreadable (sealed under another secret): marked fanned out with no delivery, so it cannot hold up the rows after it.
            if (data === null) break;
            const body = deliveryBody(row.event, row.createdAt, data, ep.fields);
            deliveries.push(newDelivery(ep, row.id, row.event, body, now, false, claim));
          }
        }
        // (event, endpoint) is unique: a delivery that somehow exists already is not built twice.
        const inserted = new Set<string>();
        for (const part of chunks(deliveries)) {
          const done = await tx.insert(webhookDeliveries).values(part.map(storedOf)).onConflictDoNothing().returning({ id: webhookDeliveries.id });
          for (const d of done) inserted.add(d.id);
        }
        await outbox.markFannedOut(
          tx,
          rows.map((r) => r.seq),
          now,
        );
        return { deliveries: deliveries.filter((d) => inserted.has(d.id)), endpoints: active, events: rows.length };
      });
    },

    /** A delivery outside the outbox (the test event of one endpoint), due now, held by `claim` if given. */
    async insertOne(endpoint: SendableEndpoint, event: string, data: Record<string, unknown>, opts: { test: boolean; claim: Claim | null }): Promise<DeliveryRow> {
      const now = Date.now();
      const row = newDelivery(endpoint, newId("evt"), event, deliveryBody(event, now, data, endpoint.fields), now, opts.test, opts.claim);
      await database.write((tx) => tx.insert(webhookDeliveries).values(storedOf(row)));
      return row;
    },

    /**
     * Records attempts and their verdicts in one transaction. A dropped
     * delivery stays dropped. A finished delivery loses its lease; a retry
     * keeps it under `claim` when held, else is released to whoever finds it
     * due. `releases`: deliveries `claim.by` lets go of without an attempt.
     */
    async record(results: AttemptResult[], claim: Claim, releases: string[] = []): Promise<void> {
      if (results.length === 0 && releases.length === 0) return;
      const now = Date.now();
      const unclaimed = { claimedBy: null, leaseUntil: null };
      const pending = eq(webhookDeliveries.status, "pending");
      const ids = (pick: (r: AttemptResult) => boolean) => results.filter(pick).map((r) => r.deliveryId);
      await database.write(async (tx) => {
        const attempts = results.map((r) => ({ deliveryId: r.deliveryId, startedAt: r.startedAt, durationMs: r.durationMs, statusCode: r.statusCode, error: r.error, manual: r.manual }));
        for (const part of chunks(attempts)) await tx.insert(webhookAttempts).values(part);
        for (const part of chunks(ids((r) => r.verdict.kind === "delivered" && !r.manual))) {
          await tx
            .update(webhookDeliveries)
            .set({ status: "delivered", attempts: sql`${webhookDeliveries.attempts} + 1`, nextAttemptAt: null, ...unclaimed, updatedAt: now })
            .where(and(pending, inArray(webhookDeliveries.id, part)));
        }
        for (const part of chunks(ids((r) => r.verdict.kind === "delivered" && r.manual))) {
          await tx
            .update(webhookDeliveries)
            .set({ status: "delivered", nextAttemptAt: null, updatedAt: now })
            .where(and(ne(webhookDeliveries.status, "dropped"), inArray(webhookDeliveries.id, part)));
        }
        for (const part of chunks(ids((r) => r.verdict.kind === "abandoned"))) {
          await tx
            .update(webhookDeliveries)
            .set({ status: "abandoned", attempts: sql`${webhookDeliveries.attempts} + 1`, nextAttemptAt: null, ...unclaimed, updatedAt: now })
            .where(and(pending, inArray(webhookDeliveries.id, part)));
        }
        for (const r of results) {
          if (r.verdict.kind !== "retry") continue;
          const lease = r.verdict.hold ? { claimedBy: claim.by, leaseUntil: claim.until } : unclaimed;
          await tx
            .update(webhookDeliveries)
            .set({ attempts: sql`${webhookDeliveries.attempts} + 1`, nextAttemptAt: r.verdict.at, ...lease, updatedAt: now })
            .where(and(pending, eq(webhookDeliveries.id, r.deliveryId)));
        }
        for (const part of chunks(releases)) {
          await tx
            .update(webhookDeliveries)
            .set(unclaimed)
            .where(and(inArray(webhookDeliveries.id, part), eq(webhookDeliveries.claimedBy, claim.by)));
        }
      });
    },

    /**
     * Claims up to `limit` pending deliveries due by `now` that nobody holds,
     * oldest due first, and returns them. A read finds candidates (an idle
     * poll takes no write lock), then one write transaction claims those still
     * claimable: of processes racing for the same rows, each row goes to one.
     * `more`: the candidates filled the limit, there may be more.
     *
     * Per organization: `skipOrgs` are not looked at, and at most
     * `roomFor(org)` of one organization's deliveries are claimed (the rest
     * stay unclaimed for a later sweep), so one organization's backlog cannot
     * take a process's whole memory.
     */
    async claimDue(now: number, limit: number, claim: Claim, share: { skipOrgs?: string[]; roomFor?: (orgId: string) => number } = {}): Promise<{ rows: DeliveryRow[]; more: boolean }> {
      const skip = share.skipOrgs ?? [];
      const candidates = await database.db
        .select({ id: webhookDeliveries.id, orgId: webhookDeliveries.orgId })
        .from(webhookDeliveries)
        .where(skip.length > 0 ? and(claimable(now), notInArray(webhookDeliveries.orgId, skip)) : claimable(now))
        .orderBy(asc(webhookDeliveries.nextAttemptAt))
        .limit(limit);
      if (candidates.length === 0) return { rows: [], more: false };
      let wanted = candidates;
      if (share.roomFor) {
        const room = new Map<string, number>();
        wanted = candidates.filter((c) => {
          const left = room.get(c.orgId) ?? share.roomFor!(c.orgId);
          room.set(c.orgId, left - 1);
          return left > 0;
        });
      }
      if (wanted.length === 0) return { rows: [], more: candidates.length === limit };
      const rows = await database.write(async (tx) => {
        const out: DeliveryRow[] = [];
        const unreadable: string[] = [];
        for (const part of chunks(wanted.map((c) => c.id))) {
          const claimed = await tx
            .update(webhookDeliveries)
            .set({ claimedBy: claim.by, leaseUntil: claim.until })
            .where(and(inArray(webhookDeliveries.id, part), claimable(now)))
            .returning();
          for (const d of claimed) {
            try {
              out.push(opened(d));
            } catch (err) {
              deps.logger?.error("Cannot open a delivery's body; it is abandoned", { delivery_id: d.id, org_id: d.orgId, endpoint_id: d.endpointId, err });
              unreadable.push(d.id);
            }
          }
        }
        // Sealed under another secret: abandoned, so it is not claimed again ahead of every other delivery.
        for (const part of chunks(unreadable)) {
          await tx.update(webhookDeliveries).set({ status: "abandoned", nextAttemptAt: null, claimedBy: null, leaseUntil: null, updatedAt: now }).where(inArray(webhookDeliveries.id, part));
        }
        return out;
      });
      rows.sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0));
      return { rows, more: candidates.length === limit };
    },

    /** Extends the lease of deliveries `claim.by` holds; answers the ids it still holds (pending and not taken by another). */
    async renew(ids: string[], claim: Claim): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      return database.write((tx) => renewLeases(tx, webhookDeliveries, webhookDeliveries, ids, claim, eq(webhookDeliveries.status, "pending")));
    },

    /** When the next pending delivery after `now` falls due, or null. */
    async nextDueAfter(now: number): Promise<number | null> {
      const rows = await database.db
        .select({ at: min(webhookDeliveries.nextAttemptAt) })
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.status, "pending"), gt(webhookDeliveries.nextAttemptAt, now)));
      return rows[0]?.at ?? null;
    },

    async get(endpointId: string, id: string): Promise<DeliveryRow | null> {
      const rows = await database.db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.endpointId, endpointId)))
        .limit(1);
      return rows[0] ? opened(rows[0]) : null;
    },

    /** Newest first, keyset-paginated on (created_at, id). */
    async list(endpointId: string, page: { limit: number; cursor?: { createdAt: number; id: string } }): Promise<DeliveryRow[]> {
      const rows = await database.db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.endpointId, endpointId), olderThan(webhookDeliveries.createdAt, webhookDeliveries.id, page.cursor)))
        .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
        .limit(page.limit);
      return rows.map(opened);
    },

    async attemptsOf(deliveryIds: string[]): Promise<Map<string, AttemptRow[]>> {
      const byDelivery = new Map<string, AttemptRow[]>();
      for (const part of chunks(deliveryIds)) {
        const rows = await database.db.select().from(webhookAttempts).where(inArray(webhookAttempts.deliveryId, part)).orderBy(asc(webhookAttempts.seq));
        for (const r of rows) {
          const list = byDelivery.get(r.deliveryId) ?? [];
          list.push(r);
          byDelivery.set(r.deliveryId, list);
        }
      }
      return byDelivery;
    },
  };
}

export type DeliveryStore = ReturnType<typeof createDeliveryStore>;
