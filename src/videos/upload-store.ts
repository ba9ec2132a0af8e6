import { eq } from "drizzle-orm";
import { uploads } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import { TUS_PATH } from "../http/tus-requests.ts";
import { UploadTooLarge } from "./errors.ts";
import { tusToken } from "./tus-token.ts";
import { assertRegistrable, claimSlot, receiveUpload, type UploadStoreDeps } from "./upload-slots.ts";

const UPLOAD_PATH = /^\/uploads\/(upl_[0-9A-Za-z]+)$/;
const TUS_UPLOAD_PATH = new RegExp(`^${TUS_PATH}/(upl_[0-9A-Za-z]+)$`);

export const UPLOAD_TTL_MS = 60 * 60 * 1000;

const sig = (deps: UploadStoreDeps, id: string, expires: number) => deps.secret.sign("upload", `${id}.${expires}`);

/**
 * Presigned PUT slots. `STORAGE=local`: single-use slots into the service's
 * own `PUT /uploads/{id}` (signed by the server secret), written to
 * `DATA_DIR/uploads/<id>`. `STORAGE=s3`: a presigned S3 PUT of the object
 * `uploads/<id>`, straight to the bucket (the bytes never cross the service);
 * the slot is checked and completed when the upload is registered.
 */
export function createUploadStore(deps: UploadStoreDeps) {
  const { database } = deps;
  return {
    create: (orgId: string, sizeHint?: number) => createSlot(deps, orgId, sizeHint),
    claim: (id: string, expiresRaw: string | null, tag: string | null) => claimSlot(deps, id, expiresRaw, tag),
    receive: (id: string, body: ReadableStream<Uint8Array> | null, maxBytes: number) => receiveUpload(deps, id, body, maxBytes),
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

    assertRegistrable: (orgId: string, id: string) => assertRegistrable(deps, orgId, id),

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

/** A new slot: the presigned PUT (the service's own, or S3's) and the tus URL of the same slot. */
async function createSlot(deps: UploadStoreDeps, orgId: string, sizeHint?: number) {
  if (sizeHint !== undefined && sizeHint > deps.maxBytes) throw new UploadTooLarge("size_bytes", deps.maxBytes);
  const id = newId("upl");
  const expiresAt = Date.now() + UPLOAD_TTL_MS;
  await deps.database.write((tx) => tx.insert(uploads).values({ id, orgId, status: "pending", expiresAt, maxBytes: deps.maxBytes, createdAt: Date.now() }));
  const expires = Math.floor(expiresAt / 1000);
  const direct = deps.store.objects.presignPut(deps.store.uploadKey(id), { expiresInSeconds: Math.floor(UPLOAD_TTL_MS / 1000) });
  return {
    upload_id: id,
    upload_url: direct ?? `${deps.baseUrl()}/uploads/${id}?expires=${expires}&sig=${sig(deps, id, expires)}`,
    method: "PUT",
    // The same slot, resumable (tus-uploads.ts): whichever of the two starts first claims it.
    tus_url: `${deps.baseUrl()}${TUS_PATH}/?token=${tusToken(deps.secret, id, expires)}`,
    source_url: `${deps.baseUrl()}/uploads/${id}`, // = sourceUrlOf(id)
    expires_at: new Date(expiresAt).toISOString(),
    max_bytes: deps.maxBytes,
  };
}

export type UploadStore = ReturnType<typeof createUploadStore>;
