import { and, eq, inArray, isNull, lte, or, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Tx } from "../db/create-database.ts";

/**
 * Leases: the one way a process holds a row (a work row, a webhook delivery,
 * a broadcast) so that no other process acts on it. A holder writes its id and
 * `lease_until`; it renews the lease while it works; a lease that lapses (the
 * holder died or stalled) makes the row anyone's again. Every write a holder
 * makes to the row afterwards is guarded by `heldBy`, so a holder that lost
 * its lease changes nothing.
 */
export interface LeaseColumns {
  id: SQLiteColumn;
  claimedBy: SQLiteColumn;
  leaseUntil: SQLiteColumn;
}

/** A holder's claim: who (random per process start) and until when. */
export interface Claim {
  by: string;
  until: number;
}

/** Held by nobody: never claimed, released, or the lease lapsed by `now`. */
export function leaseFree(cols: LeaseColumns, now: number): SQL {
  return or(isNull(cols.leaseUntil), lte(cols.leaseUntil, now))!;
}

/** Held by `holder` (whether or not its lease has lapsed: a guard on the holder's own writes). */
export function heldBy(cols: LeaseColumns, holder: string): SQL {
  return eq(cols.claimedBy, holder);
}

const CHUNK = 400;

export function chunks<T>(list: readonly T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/**
 * Extends `claim.by`'s leases on `ids` to `claim.until` (chunked, in the
 * caller's transaction); answers the ids it still holds. `still` narrows what
 * counts as held (e.g. a delivery still pending, a work row still running).
 */
export async function renewLeases(tx: Tx, table: SQLiteTable, cols: LeaseColumns, ids: readonly string[], claim: Claim, still?: SQL): Promise<Set<string>> {
  const held = new Set<string>();
  for (const part of chunks(ids)) {
    const rows = (await tx
      .update(table)
      .set({ [columnKey(table, cols.leaseUntil)]: claim.until })
      .where(and(inArray(cols.id, part), heldBy(cols, claim.by), still))
      .returning({ id: cols.id })) as { id: string }[];
    for (const r of rows) held.add(r.id);
  }
  return held;
}

/** The property name drizzle uses for a column of a table (`set` takes property names, not SQL names). */
function columnKey(table: SQLiteTable, column: SQLiteColumn): string {
  for (const [key, value] of Object.entries(table)) if (value === column) return key;
  throw new Error(`Column ${column.name} is not in the table`);
}
