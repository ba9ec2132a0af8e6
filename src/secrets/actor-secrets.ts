import { and, eq, sql } from "drizzle-orm";
import type { Database } from "../db/create-database.ts";
import { actors, streamKeys } from "../db/schema/index.ts";
import { createSecretCipher, type SecretCipher } from "./secret-cipher.ts";
import type { ServerSecret } from "./server-secret.ts";

/**
 * The secrets inside actor contexts, sealed in the stored form only: the
 * machines keep working on plaintext contexts, the `actors.state` column never
 * holds a stream key (nor the `rtmp_url`, which embeds it).
 *
 * - live stream: `streamKey` and `rtmpUrl` leave the context; `sealed` holds
 *   both (AES-256-GCM, the stream id as associated data).
 * - video (a recording): `stream.stream_key` becomes `stream.stream_key_sealed`
 *   (the video id as associated data).
 * - video with encrypted downloads: each rendition's `download_password` is
 *   stored null and `outcome.download_passwords_sealed` holds them all (the
 *   video id as associated data).
 *
 * A context stored before sealing existed (plaintext fields) opens as it is and
 * is sealed by its next write, or at start-up by `sealLegacyActorSecrets`.
 */
export interface ContextSealer {
  seal(context: any, id: string): unknown;
  open(stored: any, id: string): unknown;
}

export function createActorSealers(secret: ServerSecret): { livestream: ContextSealer; video: ContextSealer } {
  const cipher: SecretCipher = createSecretCipher(secret.derive("actor-context"));
  const openOrThrow = (sealed: string, id: string): string => {
    try {
      return cipher.open(sealed, id);
    } catch {
      throw new Error(`Cannot open the sealed secrets of ${id}: was SECRET_KEY (or DATA_DIR/secret.key) changed?`);
    }
  };
  return {
    livestream: {
      seal(ctx, id) {
        if (typeof ctx?.streamKey !== "string") return ctx;
        const { streamKey, rtmpUrl, ...rest } = ctx;
        return { ...rest, sealed: cipher.seal(JSON.stringify({ streamKey, rtmpUrl }), id) };
      },
      open(stored, id) {
        if (typeof stored?.sealed !== "string") return stored;
        const { sealed, ...rest } = stored;
        const { streamKey, rtmpUrl } = JSON.parse(openOrThrow(sealed, id)) as { streamKey: string; rtmpUrl: string };
        return { ...rest, streamKey, rtmpUrl };
      },
    },
    video: {
      seal(ctx, id) {
        let out = ctx;
        const stream = ctx?.stream;
        if (stream && typeof stream.stream_key === "string") {
          out = { ...out, stream: { id: stream.id, stream_key_sealed: cipher.seal(stream.stream_key, id) } };
        }
        const renditions: Array<{ download_password?: unknown }> | undefined = ctx?.outcome?.renditions;
        if (Array.isArray(renditions) && renditions.some((r) => typeof r?.download_password === "string")) {
          const passwords = renditions.map((r) => (typeof r?.download_password === "string" ? r.download_password : null));
          out = {
            ...out,
            outcome: {
              ...ctx.outcome,
              renditions: renditions.map((r) => ({ ...r, download_password: null })),
              download_passwords_sealed: cipher.seal(JSON.stringify(passwords), id),
            },
          };
        }
        return out;
      },
      open(stored, id) {
        let out = stored;
        const stream = stored?.stream;
        if (stream && typeof stream.stream_key_sealed === "string") {
          out = { ...out, stream: { id: stream.id, stream_key: openOrThrow(stream.stream_key_sealed, id) } };
        }
        const outcome = stored?.outcome;
        if (outcome && typeof outcome.download_passwords_sealed === "string") {
          const passwords = JSON.parse(openOrThrow(outcome.download_passwords_sealed, id)) as Array<string | null>;
          const { download_passwords_sealed: _sealed, ...rest } = outcome;
          out = { ...out, outcome: { ...rest, renditions: (rest.renditions ?? []).map((r: object, i: number) => ({ ...r, download_password: passwords[i] ?? null })) } };
        }
        return out;
      },
    },
  };
}

/**
 * Upgrades a database written before stream keys and download passwords were
 * sealed: contexts that still hold a plaintext key or password are sealed, and
 * each stream not deleted gets its key digest (the old `stream_keys` table,
 * dropped by migration 0006, held the keys in plaintext; the contexts still
 * had them). One write transaction; a
 * no-op read when there is nothing to upgrade. Returns how many rows changed.
 */
export async function sealLegacyActorSecrets(database: Database, sealers: { livestream: ContextSealer; video: ContextSealer }, keyDigest: (streamKey: string) => string): Promise<number> {
  const legacy = (kind: string, needle: string, path: string) =>
    database.db
      .select()
      .from(actors)
      .where(and(eq(actors.kind, kind), sql`instr(${actors.state}, ${needle}) > 0 AND json_extract(${actors.state}, ${path}) IS NOT NULL`));
  const streams = await legacy("livestream", '"streamKey"', "$.context.streamKey");
  const recordings = await legacy("video", '"stream_key"', "$.context.stream.stream_key");
  const withPasswords = await database.db
    .select()
    .from(actors)
    .where(and(eq(actors.kind, "video"), sql`instr(${actors.state}, '"download_password":"') > 0`));
  const videos = [...new Map([...recordings, ...withPasswords].map((r) => [r.id, r])).values()];
  if (streams.length === 0 && videos.length === 0) return 0;
  await database.write(async (tx) => {
    for (const row of streams) {
      const st = row.state as { value: unknown; context: { streamKey: string } };
      await tx
        .update(actors)
        .set({ state: { value: st.value, context: sealers.livestream.seal(st.context, row.id) } })
        .where(eq(actors.id, row.id));
      if (row.deletedAt === null) {
        await tx
          .insert(streamKeys)
          .values({ digest: keyDigest(st.context.streamKey), streamId: row.id, orgId: row.orgId, createdAt: row.createdAt })
          .onConflictDoNothing();
      }
    }
    for (const row of videos) {
      const st = row.state as { value: unknown; context: unknown };
      await tx
        .update(actors)
        .set({ state: { value: st.value, context: sealers.video.seal(st.context, row.id) } })
        .where(eq(actors.id, row.id));
    }
  });
  return streams.length + videos.length;
}
