import { integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * The content key of a DRM-packaged video (src/videos/drm-keys.ts): one row
 * per video, made when its DRM transcode first runs and reused by every later
 * run, so licences already served stay valid. The key is sealed under a key
 * derived from the server secret (purpose `drm-keys`, the video id as
 * associated data); the key id is public (`video.drm_content_id`). Deleted by
 * retention with the video's actor row (src/retention, `actors` rule).
 */
export const drmKeys = sqliteTable(
  "drm_keys",
  {
    videoId: text("video_id").primaryKey(),
    orgId: text("org_id").notNull(),
    /** 32 lowercase hex digits (16 bytes): the CENC default KID. */
    keyId: text("key_id").notNull(),
    /** `v1.<base64url>` (src/secrets/secret-cipher.ts) of the key's 32 hex digits. */
    sealedKey: text("sealed_key").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  // A licence request names key ids; two videos never share one.
  (t) => [uniqueIndex("drm_keys_key_id").on(t.keyId)],
);
