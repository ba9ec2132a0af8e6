import { and, eq } from "drizzle-orm";
import { rename, rm } from "node:fs/promises";
import { uploads } from "../db/schema/index.ts";
import { UploadEmpty, UploadNotPending, UploadNotRegistrable, UploadTooLarge, UploadUrlRefused } from "./errors.ts";
import type { Database } from "../db/create-database.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import type { MediaStore } from "../storage/media-store.ts";

/** What the upload store (upload-store.ts) and a slot's steps here are given. */
export interface UploadStoreDeps {
  database: Database;
  secret: ServerSecret;
  store: MediaStore;
  baseUrl: () => string;
  maxBytes: number;
}

/** Checks the signature and claims the slot (single use); throws UploadUrlRefused or UploadNotPending. */
export async function claimSlot(deps: UploadStoreDeps, id: string, expiresRaw: string | null, tag: string | null): Promise<{ maxBytes: number; orgId: string }> {
  const expires = Number(expiresRaw);
  if (!tag || !Number.isInteger(expires) || !deps.secret.verify("upload", `${id}.${expires}`, tag)) {
    throw new UploadUrlRefused("signature");
  }
  if (expires * 1000 < Date.now()) throw new UploadUrlRefused("expired");
  return deps.database.write(async (tx) => {
    const res = await tx
      .update(uploads)
      .set({ status: "receiving" })
      .where(and(eq(uploads.id, id), eq(uploads.status, "pending")))
      .returning({ maxBytes: uploads.maxBytes, orgId: uploads.orgId });
    if (!res[0]) throw new UploadNotPending();
    return res[0];
  });
}

/** Streams the request body to disk, never whole in memory; bounded by the server ceiling while read, by maxBytes after. */
export async function receiveUpload(deps: UploadStoreDeps, id: string, body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<number> {
  const final = deps.store.uploadPath(id);
  const part = `${final}.part`;
  await deps.store.ensure(deps.store.uploadRoot);
  let size = 0;
  try {
    // Written natively (Bun.write of a Response streams to the file without handing each chunk to JS):
    // the service's memory stays flat (+3 MiB for 256 MiB, against +20–67 MiB chunk by chunk in JS).
    // The server's ceiling (maxRequestBodySize = UPLOAD_MAX_BYTES) cuts a longer body while it is read,
    // chunked or not, and an aborted body rejects; the slot's own max is checked on what was written.
    if (body) size = await Bun.write(part, new Response(body));
    if (size > maxBytes) throw new UploadTooLarge("body", maxBytes);
    if (size === 0) throw new UploadEmpty();
    await rename(part, final);
    // STORAGE=s3 still accepts the service's own PUT (a URL handed out before a switch to s3): into the bucket.
    if (deps.store.objects.kind !== "local") await deps.store.objects.putFile(deps.store.uploadKey(id), final, { move: true });
  } catch (err) {
    await rm(part, { force: true });
    // The slot can be retried after a failed transfer.
    await deps.database.write((tx) => tx.update(uploads).set({ status: "pending" }).where(eq(uploads.id, id)));
    throw err;
  }
  await deps.database.write((tx) => tx.update(uploads).set({ status: "complete", sizeBytes: size }).where(eq(uploads.id, id)));
  return size;
}

/**
 * The upload exists, is this organization's and is finished. A presigned
 * S3 PUT tells the service nothing: the object itself is checked (stat)
 * and the slot completed here; an object over the slot's max_bytes is
 * deleted and refused, so the bucket never keeps more than was allowed.
 */
export async function assertRegistrable(deps: UploadStoreDeps, orgId: string, id: string) {
  const rows = await deps.database.db.select().from(uploads).where(eq(uploads.id, id)).limit(1);
  const row = rows[0];
  if (!row || row.orgId !== orgId) throw new UploadNotRegistrable("unknown");
  if (row.status === "complete") return;
  if (deps.store.objects.kind === "local") throw new UploadNotRegistrable("unfinished");
  const key = deps.store.uploadKey(id);
  const object = await deps.store.objects.stat(key);
  if (!object) throw new UploadNotRegistrable("unfinished");
  if (object.size > row.maxBytes) {
    await deps.store.objects.delete(key);
    throw new UploadTooLarge("body", row.maxBytes);
  }
  if (object.size === 0) {
    await deps.store.objects.delete(key);
    throw new UploadEmpty();
  }
  await deps.database.write((tx) => tx.update(uploads).set({ status: "complete", sizeBytes: object.size }).where(eq(uploads.id, id)));
}
