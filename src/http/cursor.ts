import { ApiError } from "./api-error.ts";

/** Opaque list cursors: base64url of "<createdAt>:<id>" of the last item. */
export function encodeCursor(item: { createdAt: number; id: string }): string {
  return Buffer.from(`${item.createdAt}:${item.id}`).toString("base64url");
}

export function decodeCursor(raw: string | undefined): { createdAt: number; id: string } | undefined {
  if (!raw) return undefined;
  const text = Buffer.from(raw, "base64url").toString("utf8");
  const m = /^(\d+):([A-Za-z0-9_]+)$/.exec(text);
  if (!m) throw ApiError.validation({ cursor: "must be a cursor from a previous page" });
  return { createdAt: Number(m[1]), id: m[2]! };
}

export async function paginate<T extends { createdAt: number; id: string }, R>(
  query: { limit?: string; cursor?: string },
  load: (page: { limit: number; cursor?: { createdAt: number; id: string } }) => Promise<T[]>,
  view: (item: T) => R,
) {
  const { page, next_cursor } = await pageOf(query, load);
  return { items: page.map(view), next_cursor };
}

/** `paginate` without the view: the page's rows and the next cursor (for answers serialized item by item, view-cache.ts). */
export async function pageOf<T extends { createdAt: number; id: string }>(
  query: { limit?: string; cursor?: string },
  load: (page: { limit: number; cursor?: { createdAt: number; id: string } }) => Promise<T[]>,
): Promise<{ page: T[]; next_cursor: string | null /** What `load` answered (the same object while a read cache holds it). */; rows: T[] }> {
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw ApiError.validation({ limit: "must be an integer from 1 to 100" });
  const rows = await load({ limit: limit + 1, cursor: decodeCursor(query.cursor) });
  const page = rows.slice(0, limit);
  return { page, next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null, rows };
}
