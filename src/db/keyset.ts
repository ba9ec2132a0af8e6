import { and, eq, lt, or, type Column, type SQL } from "drizzle-orm";

/**
 * Keyset pagination, newest first: the rows after `cursor` in
 * (created_at DESC, id DESC) order. No cursor: no condition.
 */
export function olderThan(createdAt: Column, id: Column, cursor?: { createdAt: number; id: string }): SQL | undefined {
  if (!cursor) return undefined;
  return or(lt(createdAt, cursor.createdAt), and(eq(createdAt, cursor.createdAt), lt(id, cursor.id)));
}
