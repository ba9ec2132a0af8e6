import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Stream key → stream: the RTMP server's lookup. Keys are secrets and never accepted by the API. */
export const streamKeys = sqliteTable(
  "stream_keys",
  {
    streamKey: text("stream_key").primaryKey(),
    streamId: text("stream_id").notNull(),
    orgId: text("org_id").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("stream_keys_stream").on(t.streamId)],
);
