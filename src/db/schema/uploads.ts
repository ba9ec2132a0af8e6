import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Presigned single-use upload slots (POST /videos/upload-url/). */
export const uploads = sqliteTable(
  "uploads",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    /** pending | receiving | complete */
    status: text("status").notNull(),
    expiresAt: integer("expires_at").notNull(),
    maxBytes: integer("max_bytes").notNull(),
    sizeBytes: integer("size_bytes"),
    createdAt: integer("created_at").notNull(),
  },
  // Retention: slots past their expiry by UPLOAD_RETENTION_MS (src/retention).
  (t) => [index("uploads_expires").on(t.expiresAt)],
);
