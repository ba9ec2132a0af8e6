import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Stream key → stream: the RTMP server's lookup. Keys are secrets and never
 * accepted by the API, so only an HMAC-SHA256 digest of the key (under a key
 * derived from the server secret for this purpose) is stored and looked up.
 */
export const streamKeys = sqliteTable(
  "stream_key_digests",
  {
    digest: text("digest").primaryKey(),
    streamId: text("stream_id").notNull(),
    orgId: text("org_id").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("stream_key_digests_stream").on(t.streamId)],
);
