import { and, eq } from "drizzle-orm";
import { rename, rm } from "node:fs/promises";
import type { Database } from "../db/create-database.ts";
import { uploads } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { TUS_PATH } from "../http/tus-requests.ts";
import { UploadEmpty, UploadNotPending, UploadNotRegistrable, UploadTooLarge, UploadUrlRefused } from "./errors.ts";
import { tusToken } from "./tus-token.ts";

const UPLOAD_PATH = /^\/uploads\/(upl_[0-9A-Za-z]+)$/;
const TUS_UPLOAD_PATH = new RegExp(`^${TUS_PATH}/(upl_[0-9A-Za-z]+)$`);

export const UPLOAD_TTL_MS = 60 * 60 * 1000;

/**
 * Presigned PUT slots. `STORAGE=local`: single-use slots into the service's
 * own `PUT /uploads/{id}` (signed by the server secret), written to
 * `DATA_DIR/uploads/<id>`. `STORAGE=s3`: a presigned S3 PUT of the object
 * `uploads/<id>`, straight to the bucket (the bytes never cross the service);
 * the slot is checked and completed when the upload is registered.
 */
export function createUploadStore(deps: { database: Database; secret: ServerSecret; store: MediaStore; baseUrl: () => string; maxBytes: number }) {
  const { database } = deps;
  const objects = deps.store.objects;
  const sig = (id: string, expires: number) => deps.secret.sign("upload", `${id}.${expires}`);

  return {
    async create(orgId: string, sizeHint?: number) {
      if (sizeHint !== undefined && sizeHint > deps.maxBytes) throw new UploadTooLarge("size_bytes", deps.maxBytes);
      const id = newId("upl");
      const expiresAt = Date.now() + UPLOAD_TTL_MS;
      await database.write((tx) => tx.insert(uploads).values({ id, orgId, status: "pending", expiresAt, maxBytes: deps.maxBytes, createdAt: Date.now() }));
      const expires = Math.floor(expiresAt / 1000);
      const direct = objects.presignPut(deps.store.uploadKey(id), { expiresInSeconds: Math.floor(UPLOAD_TTL_MS / 1000) });
      return {
        upload_id: id,
        upload_url: direct ?? `${deps.baseUrl()}/uploads/${id}?expires=${expires}&sig=${sig(id, expires)}`,
        method: "PUT",
        // The same slot, resumable (tus-uploads.ts): whichever of the two starts first claims it.
        tus_url: `${deps.baseUrl()}${TUS_PATH}/?token=${tusToken(deps.secret, id, expires)}`,
        source_url: `${deps.baseUrl()}/uploads/${id}`, // = sourceUrlOf(id)
        expires_at: new Date(expiresAt).toISOString(),
        max_bytes: deps.maxBytes,
      };
    },

    /** Checks the signature and claims the slot (single use); throws UploadUrlRefused or UploadNotPending. */
    async claim(id: string, expiresRaw: string | null, tag: string | null): Promise<{ maxBytes: number; orgId: string }> {
      const expires = Number(expiresRaw);
      if (!tag || !Number.isInteger(expires) || !deps.secret.verify("upload", `${id}.${expires}`, tag)) {
        throw new UploadUrlRefused("signature");
      }
      if (expires * 1000 < Date.now()) throw new UploadUrlRefused("expired");
      return database.write(async (tx) => {
        const res = await tx
          .update(uploads)
          .set({ status: "receiving" })
          .where(and(eq(uploads.id, id), eq(uploads.status, "pending")))
          .returning({ maxBytes: uploads.maxBytes, orgId: uploads.orgId });
        if (!res[0]) throw new UploadNotPending();
        return res[0];
      });
    },

    /** Streams the request body to disk, never whole in memory, capped at maxBytes. */
    async receive(id: string, body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<number> {
      const final = deps.store.uploadPath(id);
      const part = `${final}.part`;
      await deps.store.ensure(deps.store.uploadRoot);
      const sink = Bun.file(part).writer({ highWaterMark: 1024 * 1024 });
      let size = 0;
      try {
        if (body) {
          for await (const chunk of body) {
            size += chunk.byteLength;
            if (size > maxBytes) throw new UploadTooLarge("body", maxBytes);
            sink.write(chunk);
            await sink.flush();
          }
        }
        await sink.end();
        if (size === 0) throw new UploadEmpty();
        await rename(part, final);
        // STORAGE=s3 still accepts the service's own PUT (a URL handed out before a switch to s3): into the bucket.
        if (objects.kind !== "local") await objects.putFile(deps.store.uploadKey(id), final, { move: true });
      } catch (err) {
        await Promise.resolve(sink.end()).catch(() => undefined);
        await rm(part, { force: true });
        // The slot can be retried after a failed transfer.
        await database.write((tx) => tx.update(uploads).set({ status: "pending" }).where(eq(uploads.id, id)));
        throw err;
      }
      await database.write((tx) => tx.update(uploads).set({ status: "complete", sizeBytes: size }).where(eq(uploads.id, id)));
      return size;
    },

    /**
     * The upload a `source_url` names: `${base}/uploads/<id>` (what upload-url
     * and `X-Source-Url` give), or the tus upload's own URL
     * `${base}/api/public/v1/videos/uploads/<id>` (a tus client's `upload.url`,
     * `?token=` or not), so a client resuming in a new process needs nothing
     * it did not keep already.
     */
    idFromSourceUrl(url: URL): string | null {
      const base = new URL(deps.baseUrl());
      if (url.origin !== base.origin) return null;
      const m = UPLOAD_PATH.exec(url.pathname) ?? TUS_UPLOAD_PATH.exec(url.pathname);
      return m ? m[1]! : null;
    },

    /** The canonical source_url of an upload (no query, no fragment). */
    sourceUrlOf: (id: string) => `${deps.baseUrl()}/uploads/${id}`,

    /**
     * The upload exists, is this organization's and is finished. A presigned
     * S3 PUT tells the service nothing: the object itself is checked (stat)
     * and the slot completed here; an object over the slot's max_bytes is
     * deleted and refused, so the bucket never keeps more than was allowed.
     */
    async assertRegistrable(orgId: string, id: string) {
      const rows = await database.db.select().from(uploads).where(eq(uploads.id, id)).limit(1);
      const row = rows[0];
      if (!row || row.orgId !== orgId) throw new UploadNotRegistrable("unknown");
      if (row.status === "complete") return;
      if (objects.kind === "local") throw new UploadNotRegistrable("unfinished");
      const key = deps.store.uploadKey(id);
      const object = await objects.stat(key);
      if (!object) throw new UploadNotRegistrable("unfinished");
      if (object.size > row.maxBytes) {
        await objects.delete(key);
        throw new UploadTooLarge("body", row.maxBytes);
      }
      if (object.size === 0) {
        await objects.delete(key);
        throw new UploadEmpty();
      }
      await database.write((tx) => tx.update(uploads).set({ status: "complete", sizeBytes: object.size }).where(eq(uploads.id, id)));
    },

    /** The max_bytes of a slot, or null when the slot is gone. */
    async maxBytesOf(id: string): Promise<number | null> {
      const rows = await database.db.select({ maxBytes: uploads.maxBytes }).from(uploads).where(eq(uploads.id, id)).limit(1);
      return rows[0]?.maxBytes ?? null;
    },

    /** The upload's object key (`uploads/<id>`). */
    key: (id: string) => deps.store.uploadKey(id),
    /** Where the upload is on this machine's disk in the local layout. */
    path: (id: string) => deps.store.uploadPath(id),
  };
}

export type UploadStore = ReturnType<typeof createUploadStore>;
