import { and, eq, sql } from "drizzle-orm";
import type { Db, Tx } from "../db/create-database.ts";
import { actorTags } from "../db/schema/index.ts";
import type { ActorKindName } from "./actor-kinds.ts";

/** How many actors of a kind carry a state tag (all organizations, or one): one range of actor_tags' primary key. */
export async function countTagged(tx: Tx | Db, kind: ActorKindName, tag: string, orgId?: string): Promise<number> {
  const rows = await tx
    .select({ n: sql<number>`count(*)` })
    .from(actorTags)
    .where(and(eq(actorTags.kind, kind), eq(actorTags.tag, tag), orgId === undefined ? undefined : eq(actorTags.orgId, orgId)));
  return Number(rows[0]?.n ?? 0);
}
