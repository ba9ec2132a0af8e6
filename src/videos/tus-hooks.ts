import type { ServerOptions } from "@tus/server";
import { and, count, eq, gt, isNotNull } from "drizzle-orm";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { Database } from "../db/create-database.ts";
import { uploads } from "../db/schema/index.ts";
import { ApiError } from "../http/api-error.ts";
import type { Logger } from "../log.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { callerOf, notFound, ownedBy, type TusCaller, tusError } from "./tus-caller.ts";
import { UPLOAD_TTL_MS } from "./upload-store.ts";

export interface TusDeps {
  database: Database;
  secret: ServerSecret;
  store: MediaStore;
  baseUrl: () => string;
  maxBytes: number;
  /** Unfinished resumable uploads one organization may hold at once (UPLOAD_CONCURRENT_PER_ORG). */
  concurrentPerOrg: number;
  /** Issue 23: an organization without transcoding gets no upload (409 TRANSCODE_NOT_CONFIGURED), as on POST /videos/. */
  transcodingConfigured: (orgId: string) => Promise<boolean>;
  logger: Logger;
}

type Upload = Parameters<NonNullable<ServerOptions["onUploadCreate"]>>[1];
type WriteTx = Parameters<Parameters<Database["write"]>[0]>[0];

const notConfigured = () => tusError(new ApiError("TRANSCODE_NOT_CONFIGURED"));
const tooMany = (deps: TusDeps) => tusError(new ApiError("RATE_LIMITED", `At most ${deps.concurrentPerOrg} unfinished uploads per organization; finish or delete one, or wait for one to expire.`));

/** A token's slot: whether its organization has transcoding (an unknown slot is left to the claim, which answers 404). */
async function slotOrgTranscodes(deps: TusDeps, slot: string): Promise<boolean> {
  const row = (await deps.database.db.select({ orgId: uploads.orgId }).from(uploads).where(eq(uploads.id, slot)).limit(1))[0];
  return !row || (await deps.transcodingConfigured(row.orgId));
}

/** Unfinished tus uploads of the organization, not expired (index uploads_expires). */
async function openUploads(tx: WriteTx, orgId: string, now: number): Promise<number> {
  const rows = await tx
    .select({ n: count() })
    .from(uploads)
    .where(and(eq(uploads.orgId, orgId), eq(uploads.status, "receiving"), isNotNull(uploads.sizeBytes), gt(uploads.expiresAt, now)));
  return rows[0]?.n ?? 0;
}

/** HEAD, PATCH, DELETE: the upload must be the caller's, unfinished and not expired; a PATCH extends its life. */
export async function checkIncoming(deps: TusDeps, req: Request, id: string): Promise<void> {
  if (req.method === "POST") return;
  const caller = callerOf(deps.secret, req);
  const row = (await deps.database.db.select().from(uploads).where(eq(uploads.id, id)).limit(1))[0];
  if (!row || !ownedBy(caller, row) || row.status !== "receiving" || row.sizeBytes === null || row.expiresAt < Date.now()) throw notFound();
  if (req.method === "PATCH")
    await deps.database.write((tx) =>
      tx
        .update(uploads)
        .set({ expiresAt: Date.now() + UPLOAD_TTL_MS })
        .where(eq(uploads.id, id)),
    );
}

/** After the size check: the slot is created (key) or claimed (token), under the concurrency bound, in one write. */
export async function createSlot(deps: TusDeps, req: Request, upload: Upload): Promise<Record<string, never>> {
  if (!upload.size) throw tusError(ApiError.validation({ "Upload-Length": "must be at least 1" }), 400);
  const caller = callerOf(deps.secret, req);
  const now = Date.now();
  // Nothing could be registered from the upload: refused before anything is created or claimed.
  if ("orgId" in caller ? !caller.transcoding : !(await slotOrgTranscodes(deps, caller.slot))) throw notConfigured();
  await deps.database.write((tx) => ("orgId" in caller ? insertSlot(deps, tx, caller.orgId, upload.id, upload.size!, now) : claimSlot(deps, tx, caller, upload.size!, now)));
  return {};
}

/** The key's upload: a new slot of its organization. */
async function insertSlot(deps: TusDeps, tx: WriteTx, orgId: string, id: string, size: number, now: number): Promise<void> {
  if ((await openUploads(tx, orgId, now)) >= deps.concurrentPerOrg) throw tooMany(deps);
  await tx.insert(uploads).values({ id, orgId, status: "receiving", expiresAt: now + UPLOAD_TTL_MS, maxBytes: deps.maxBytes, sizeBytes: size, createdAt: now });
}

/** The token's upload: its pending slot claimed, once. */
async function claimSlot(deps: TusDeps, tx: WriteTx, caller: Extract<TusCaller, { slot: string }>, size: number, now: number): Promise<void> {
  const row = (await tx.select().from(uploads).where(eq(uploads.id, caller.slot)).limit(1))[0];
  // Single use: a slot already claimed (by a PUT or an earlier tus creation) or finished is gone.
  if (row?.status !== "pending") throw notFound();
  if (size > row.maxBytes) throw tusError(ApiError.validation({ "Upload-Length": `must be at most ${row.maxBytes}` }), 413);
  if ((await openUploads(tx, row.orgId, now)) >= deps.concurrentPerOrg) throw tooMany(deps);
  await tx
    .update(uploads)
    .set({ status: "receiving", sizeBytes: size, expiresAt: now + UPLOAD_TTL_MS })
    .where(and(eq(uploads.id, caller.slot), eq(uploads.status, "pending")));
}

/** The last byte is in: the file moves to the upload's own place and the slot is complete. */
export async function finishUpload(deps: TusDeps, directory: string, id: string, size: number): Promise<void> {
  // Into the upload's own place: a rename on this disk, or the bucket with STORAGE=s3 (then removed here).
  await deps.store.ensure(deps.store.uploadRoot);
  await deps.store.objects.putFile(deps.store.uploadKey(id), join(directory, id), { move: true });
  await rm(join(directory, `${id}.json`), { force: true });
  await deps.database.write((tx) => tx.update(uploads).set({ status: "complete", sizeBytes: size }).where(eq(uploads.id, id)));
  deps.logger.info("Resumable upload complete", { upload_id: id, size_bytes: size });
}
