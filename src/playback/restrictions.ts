import { and, desc, eq } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import { playbackRestrictions } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import { NotFound } from "./errors.ts";
import type { ReferrerRule } from "./referrer-rule.ts";

export interface RestrictionRow {
  id: string;
  orgId: string;
  referrer: ReferrerRule;
  createdAt: number;
}

export const restrictionView = (row: RestrictionRow) => ({
  id: row.id,
  referrer: { allowed_domains: [...row.referrer.allowed_domains], allow_no_referrer: row.referrer.allow_no_referrer },
  created_at: new Date(row.createdAt).toISOString(),
});

/** Playback restrictions (table `playback_restrictions`): referrer rules an asset or a token names by id. */
export function createRestrictions(database: Database) {
  async function readRow(id: string): Promise<RestrictionRow | null> {
    const [row] = await database.db.select().from(playbackRestrictions).where(eq(playbackRestrictions.id, id)).limit(1);
    return row ? { ...row, referrer: row.referrer as ReferrerRule } : null;
  }

  return {
    async create(orgId: string, referrer: ReferrerRule): Promise<RestrictionRow> {
      const row: RestrictionRow = { id: newId("pbr"), orgId, referrer, createdAt: Date.now() };
      await database.write((tx) => tx.insert(playbackRestrictions).values(row));
      return row;
    },

    list: async (orgId: string): Promise<RestrictionRow[]> =>
      (await database.db.select().from(playbackRestrictions).where(eq(playbackRestrictions.orgId, orgId)).orderBy(desc(playbackRestrictions.createdAt), desc(playbackRestrictions.id))).map((r) => ({
        ...r,
        referrer: r.referrer as ReferrerRule,
      })),

    /** One of this organization's restrictions, or null (another organization's is null too). */
    async get(orgId: string, id: string): Promise<RestrictionRow | null> {
      if (id.length > 64) return null;
      const row = await database.cache.read(`restriction:${id}`, () => readRow(id));
      return row && row.orgId === orgId ? row : null;
    },

    async remove(orgId: string, id: string): Promise<void> {
      const gone = await database.write((tx) =>
        tx
          .delete(playbackRestrictions)
          .where(and(eq(playbackRestrictions.id, id), eq(playbackRestrictions.orgId, orgId)))
          .returning({ id: playbackRestrictions.id }),
      );
      if (gone.length === 0) throw new NotFound();
    },
  };
}

export type Restrictions = ReturnType<typeof createRestrictions>;
