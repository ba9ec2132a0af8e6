import { eq } from "drizzle-orm";
import type { PlaintextRow } from "../actors/actor-runtime.ts";
import type { Database, Tx } from "../db/create-database.ts";
import { streamKeys } from "../db/schema/index.ts";

/**
 * Stream key digests (table `stream_key_digests`): how an RTMP or SRT publish
 * finds its stream without the key being stored anywhere. Written with the
 * stream's creation, deleted with the stream.
 */
export function createStreamKeys(deps: { database: Database; keyDigest: (streamKey: string) => string }) {
  const { database, keyDigest } = deps;
  return {
    /** The new stream's digest, in its creation's transaction. */
    async addIn(tx: Tx, o: { streamKey: string; streamId: string; orgId: string; createdAt?: number }): Promise<void> {
      await tx
        .insert(streamKeys)
        .values({ digest: keyDigest(o.streamKey), streamId: o.streamId, orgId: o.orgId, createdAt: o.createdAt ?? Date.now() })
        .onConflictDoNothing();
    },

    /** The deleted stream's digest, in its transition's transaction. */
    async removeIn(tx: Tx, streamId: string): Promise<void> {
      await tx.delete(streamKeys).where(eq(streamKeys.streamId, streamId));
    },

    /** The stream a key publishes to, or null. */
    async streamOf(streamKey: string): Promise<string | null> {
      const rows = await database.db
        .select({ streamId: streamKeys.streamId })
        .from(streamKeys)
        .where(eq(streamKeys.digest, keyDigest(streamKey)))
        .limit(1);
      return rows[0]?.streamId ?? null;
    },

    /**
     * For `runtime.sealStoredSecrets`: a stream stored before keys were sealed gets its digest back (the old
     * `stream_keys` table, dropped by migration 0006, held the keys in plaintext; the contexts still had them).
     */
    async restoreIn(tx: Tx, row: PlaintextRow): Promise<void> {
      const key = (row.context as { streamKey?: unknown } | null)?.streamKey;
      if (row.kind !== "livestream" || row.deleted || typeof key !== "string") return;
      await this.addIn(tx, { streamKey: key, streamId: row.id, orgId: row.orgId, createdAt: row.createdAt });
    },
  };
}

export type StreamKeys = ReturnType<typeof createStreamKeys>;
