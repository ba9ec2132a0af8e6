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

/**
 * Which process holds a stream's broadcast (its publisher's socket, the open
 * recording and playlist): the owner renews `lease_until` while it holds the
 * broadcast. Another process ends a broadcast only when its owner's lease has
 * lapsed (the owner died); a second process never ends the first's streams.
 * Deleted when the broadcast is finalized.
 */
export const broadcasts = sqliteTable(
  "broadcasts",
  {
    streamId: text("stream_id").primaryKey(),
    orgId: text("org_id").notNull(),
    claimedBy: text("claimed_by").notNull(),
    leaseUntil: integer("lease_until").notNull(),
    /** First publish of the broadcast: the duration of an explicit end answered by another process. */
    startedAt: integer("started_at").notNull(),
    /** When the last publisher left (null while one is publishing). */
    leftAt: integer("left_at"),
  },
  (t) => [index("broadcasts_lease").on(t.leaseUntil)],
);

/**
 * A broadcast's simulcast targets (issue 26): declared by the API, run by the
 * process holding the broadcast's lease (src/live/outputs), which writes
 * their status back. `url` is the shown form (the key as `***`); the target
 * as sent (with its key) is sealed under the row's id. Deleted by
 * `DELETE /livestreams/{id}/outputs/{output_id}/` and with their stream.
 */
export const liveOutputs = sqliteTable(
  "live_outputs",
  {
    id: text("id").primaryKey(),
    streamId: text("stream_id").notNull(),
    orgId: text("org_id").notNull(),
    name: text("name"),
    url: text("url").notNull(),
    sealedTarget: text("sealed_target").notNull(),
    /** idle | connecting | active | reconnecting | failed | stopped */
    status: text("status").notNull(),
    bytesSent: integer("bytes_sent").notNull(),
    startedAt: integer("started_at"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("live_outputs_stream").on(t.streamId, t.createdAt)],
);
