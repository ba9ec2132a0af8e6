import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import { actors, drmKeys } from "../db/schema/index.ts";
import { createSecretCipher } from "../secrets/secret-cipher.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";

/** A video's CENC content key: key id and key, 32 lowercase hex digits each (media/transcoder TranscodeJob.drm). */
export interface DrmKey {
  keyId: string;
  key: string;
}

const hex16 = () => Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex");

/**
 * One random key per DRM video (table `drm_keys`), sealed at rest under a key
 * derived from the server secret (purpose `drm-keys`) with the video id as
 * associated data, so a sealed key copied to another row does not open.
 * The key itself is never logged and never leaves this module except to the
 * packager and to the licence answer; only the key id is public.
 */
export function createDrmKeys(deps: { database: Database; secret: ServerSecret }) {
  const cipher = createSecretCipher(deps.secret.derive("drm-keys"));

  async function find(videoId: string): Promise<DrmKey | null> {
    const [row] = await deps.database.db.select().from(drmKeys).where(eq(drmKeys.videoId, videoId)).limit(1);
    return row ? { keyId: row.keyId, key: cipher.open(row.sealedKey, videoId) } : null;
  }

  return {
    find,

    /** For the licence: the key of a video that is not deleted (a deleted video's row waits for retention). */
    async forLicence(videoId: string): Promise<DrmKey | null> {
      const [row] = await deps.database.db
        .select({ keyId: drmKeys.keyId, sealedKey: drmKeys.sealedKey })
        .from(drmKeys)
        .innerJoin(actors, and(eq(actors.id, drmKeys.videoId), isNull(actors.deletedAt)))
        .where(eq(drmKeys.videoId, videoId))
        .limit(1);
      return row ? { keyId: row.keyId, key: cipher.open(row.sealedKey, videoId) } : null;
    },

    /** The key id alone (the public `drm_content_id`), without opening the key. */
    async keyIdOf(videoId: string): Promise<string | null> {
      const [row] = await deps.database.db.select({ keyId: drmKeys.keyId }).from(drmKeys).where(eq(drmKeys.videoId, videoId)).limit(1);
      return row?.keyId ?? null;
    },

    /**
     * The video's key, made on first call. A repeated run (after a crash, or
     * on another process) gets the same key: the insert does nothing when a
     * row exists, and the row is read back in the same write transaction.
     */
    async ensure(videoId: string, orgId: string): Promise<DrmKey> {
      const existing = await find(videoId);
      if (existing) return existing;
      const key = hex16();
      const row = await deps.database.write(async (tx) => {
        await tx
          .insert(drmKeys)
          .values({ videoId, orgId, keyId: hex16(), sealedKey: cipher.seal(key, videoId), createdAt: Date.now() })
          .onConflictDoNothing({ target: drmKeys.videoId });
        const [stored] = await tx.select().from(drmKeys).where(eq(drmKeys.videoId, videoId)).limit(1);
        return stored!;
      });
      return { keyId: row.keyId, key: cipher.open(row.sealedKey, videoId) };
    },
  };
}

export type DrmKeys = ReturnType<typeof createDrmKeys>;
