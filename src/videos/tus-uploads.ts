import { FileStore } from "@tus/file-store";
import { Server, type ServerOptions } from "@tus/server";
import { and, count, eq, gt, isNotNull } from "drizzle-orm";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { Database } from "../db/create-database.ts";
import { uploads } from "../db/schema/index.ts";
import { authByRequest } from "../http/api-context.ts";
import { ApiError } from "../http/api-error.ts";
import { errorBody } from "../http/envelope.ts";
import { TUS_PATH } from "../http/tus-requests.ts";
import { newId } from "../ids.ts";
import type { Logger } from "../log.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { readTusToken } from "./tus-token.ts";
import { UPLOAD_TTL_MS } from "./upload-store.ts";

/** Headers a browser may send beyond tus's own list (the key, for server-side or trusted pages). */
const EXTRA_ALLOWED = ["X-API-Key", "X-Request-Id"];
/** Headers a browser page may read beyond tus's own list (Location, Upload-Offset, Upload-Length, Tus-Resumable, …). */
const EXTRA_EXPOSED = ["X-Source-Url", "X-Request-Id", "Retry-After"];
/** tus's own header list (@tus/utils HEADERS) plus ours: what a page may read from every tus answer. */
const EXPOSED = [
  "Location",
  "Tus-Extension",
  "Tus-Max-Size",
  "Tus-Resumable",
  "Tus-Version",
  "Upload-Concat",
  "Upload-Defer-Length",
  "Upload-Length",
  "Upload-Metadata",
  "Upload-Offset",
  ...EXTRA_EXPOSED,
];
/** The upload id a tus URL names (its last path segment; the query may carry the token). */
const idOfUrl = (url: string) => /\/(upl_[0-9A-Za-z]+)\/?$/.exec(new URL(url, "http://x").pathname)?.[1];
/** A tus error the hooks throw: the body is already the envelope. */
const tusError = (err: ApiError, status = err.status) => ({ status_code: status, body: JSON.stringify(errorBody(err)) });

/** The folder (under DATA_DIR, on this machine's disk) where unfinished tus uploads grow: `<id>` and `<id>.json`. */
export const tusDirectory = (dataDir: string) => join(dataDir, "uploads", "tus");

/**
 * Resumable uploads (tus 1.0, `@tus/server` + `@tus/file-store`) at
 * `/api/public/v1/videos/uploads/`. Each upload is an upload slot (table
 * `uploads`, id `upl_…`) in status `receiving`, with `size_bytes` holding the
 * announced `Upload-Length` (that is what tells a tus slot from a presigned
 * PUT in progress, for the concurrency bound and for retention). Once the last
 * byte is in, the file moves to the upload's own place (`uploads/<id>`: this
 * disk, or the bucket with STORAGE=s3) and the slot becomes `complete`, exactly
 * as a presigned PUT leaves it: the client registers `{BASE_URL}/uploads/<id>`
 * with POST /videos/ (`X-Source-Url` on every answer about the upload:
 * creation, HEAD, PATCH), or the tus URL itself (upload-store.ts).
 *
 * Who may: the API key (its organization's uploads; another's id is 404), or
 * the presigned token of one slot (`?token=`, tus-token.ts) that creates that
 * upload once and then reaches only it.
 */
export function createTusUploads(deps: {
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
}) {
  const { database } = deps;
  const directory = tusDirectory(deps.store.dataDir);
  const datastore = new FileStore({ directory });
  // No deferred length (the size is checked against max_bytes at creation: 413) and no tus
  // expiration (retention removes abandoned uploads, src/retention): both left out of Tus-Extension.
  datastore.extensions = ["creation", "creation-with-upload", "termination"];

  /** The caller of a request: the organization of its key, or the slot its presigned token names. */
  function callerOf(req: Request): { orgId: string; transcoding: boolean } | { slot: string; expires: number } {
    const auth = authByRequest.get(req);
    if (auth) return { orgId: auth.org.id, transcoding: auth.org.settings.transcoding !== null };
    const token = readTusToken(deps.secret, new URL(req.url).searchParams.get("token"));
    if (!token) throw tusError(new ApiError("PERMISSION_DENIED", "The upload token is invalid.", ["upload.token"]));
    return { slot: token.uploadId, expires: token.expires };
  }

  const notFound = () => tusError(new ApiError("NOT_FOUND", "No upload at this URL."));
  const notConfigured = () => tusError(new ApiError("TRANSCODE_NOT_CONFIGURED"));
  const tooMany = () => tusError(new ApiError("RATE_LIMITED", `At most ${deps.concurrentPerOrg} unfinished uploads per organization; finish or delete one, or wait for one to expire.`));

  /** A token's slot: whether its organization has transcoding (an unknown slot is left to the claim, which answers 404). */
  async function slotOrgTranscodes(slot: string): Promise<boolean> {
    const row = (await database.db.select({ orgId: uploads.orgId }).from(uploads).where(eq(uploads.id, slot)).limit(1))[0];
    return !row || (await deps.transcodingConfigured(row.orgId));
  }

  /** Unfinished tus uploads of the organization, not expired (index uploads_expires). */
  const openUploads = async (tx: Parameters<Parameters<Database["write"]>[0]>[0], orgId: string, now: number) => {
    const rows = await tx
      .select({ n: count() })
      .from(uploads)
      .where(and(eq(uploads.orgId, orgId), eq(uploads.status, "receiving"), isNotNull(uploads.sizeBytes), gt(uploads.expiresAt, now)));
    return rows[0]?.n ?? 0;
  };

  async function finish(id: string, size: number) {
    // Into the upload's own place: a rename on this disk, or the bucket with STORAGE=s3 (then removed here).
    await deps.store.ensure(deps.store.uploadRoot);
    await deps.store.objects.putFile(deps.store.uploadKey(id), join(directory, id), { move: true });
    await rm(join(directory, `${id}.json`), { force: true });
    await database.write((tx) => tx.update(uploads).set({ status: "complete", sizeBytes: size }).where(eq(uploads.id, id)));
    deps.logger.info("Resumable upload complete", { upload_id: id, size_bytes: size });
  }

  const options: Omit<ServerOptions, "locker"> & { datastore: FileStore } = {
    path: TUS_PATH,
    datastore,
    maxSize: deps.maxBytes,
    // Location and the ids: the service's BASE_URL (as behind a proxy), and the token carried along so a browser's PATCH keeps it.
    generateUrl: (req, { id }) => {
      const token = authByRequest.has(req) ? null : new URL(req.url).searchParams.get("token");
      return `${deps.baseUrl()}${TUS_PATH}/${id}${token ? `?token=${encodeURIComponent(token)}` : ""}`;
    },
    // The default reads the last segment of the whole URL, query included.
    getFileIdFromRequest: (req) => idOfUrl(req.url),
    namingFunction: (req) => {
      const caller = callerOf(req);
      if ("orgId" in caller) return newId("upl");
      if (caller.expires * 1000 < Date.now()) throw tusError(new ApiError("PERMISSION_DENIED", "The upload token has expired.", ["upload.token"]));
      return caller.slot;
    },
    allowedHeaders: EXTRA_ALLOWED,
    exposedHeaders: EXTRA_EXPOSED,
    // HEAD, PATCH, DELETE: the upload must be the caller's, unfinished and not expired; a PATCH extends its life.
    onIncomingRequest: async (req, id) => {
      if (req.method === "POST") return;
      const caller = callerOf(req);
      const row = (await database.db.select().from(uploads).where(eq(uploads.id, id)).limit(1))[0];
      const mine = row && ("orgId" in caller ? row.orgId === caller.orgId : caller.slot === id);
      if (!row || !mine || row.status !== "receiving" || row.sizeBytes === null || row.expiresAt < Date.now()) throw notFound();
      if (req.method === "PATCH")
        await database.write((tx) =>
          tx
            .update(uploads)
            .set({ expiresAt: Date.now() + UPLOAD_TTL_MS })
            .where(eq(uploads.id, id)),
        );
    },
    // After the size check: the slot is created (key) or claimed (token), under the concurrency bound, in one write.
    onUploadCreate: async (req, upload) => {
      if (!upload.size) throw tusError(ApiError.validation({ "Upload-Length": "must be at least 1" }), 400);
      const caller = callerOf(req);
      const now = Date.now();
      // Nothing could be registered from the upload: refused before anything is created or claimed.
      if ("orgId" in caller ? !caller.transcoding : !(await slotOrgTranscodes(caller.slot))) throw notConfigured();
      await database.write(async (tx) => {
        if ("orgId" in caller) {
          if ((await openUploads(tx, caller.orgId, now)) >= deps.concurrentPerOrg) throw tooMany();
          await tx.insert(uploads).values({ id: upload.id, orgId: caller.orgId, status: "receiving", expiresAt: now + UPLOAD_TTL_MS, maxBytes: deps.maxBytes, sizeBytes: upload.size, createdAt: now });
          return;
        }
        const row = (await tx.select().from(uploads).where(eq(uploads.id, caller.slot)).limit(1))[0];
        // Single use: a slot already claimed (by a PUT or an earlier tus creation) or finished is gone.
        if (row?.status !== "pending") throw notFound();
        if (upload.size! > row.maxBytes) throw tusError(ApiError.validation({ "Upload-Length": `must be at most ${row.maxBytes}` }), 413);
        if ((await openUploads(tx, row.orgId, now)) >= deps.concurrentPerOrg) throw tooMany();
        await tx
          .update(uploads)
          .set({ status: "receiving", sizeBytes: upload.size, expiresAt: now + UPLOAD_TTL_MS })
          .where(and(eq(uploads.id, caller.slot), eq(uploads.status, "pending")));
      });
      return {};
    },
    onUploadFinish: async (_req, upload) => {
      await finish(upload.id, upload.size ?? upload.offset);
      return {};
    },
  };
  const server = new Server(options as ServerOptions & { datastore: FileStore });
  // A terminated upload (DELETE) gives its slot back to the organization's bound: the row goes with its files.
  server.on("POST_TERMINATE" as never, (_req: Request, _res: Response, id: string) => {
    void database.write((tx) => tx.delete(uploads).where(eq(uploads.id, id))).catch((err) => deps.logger.warn("Could not delete a terminated upload's slot", { err, upload_id: id }));
  });

  /**
   * One tus request. A HEAD on a finished upload answers its full offset (a
   * client resuming after the last PATCH's answer was lost learns it is done;
   * the tus store no longer holds it). Errors are the envelope, with the
   * status tus gives them (413, 409, 412, …) so tus clients still understand.
   */
  async function handle(request: Request): Promise<Response> {
    if (request.method === "HEAD") {
      const done = await finishedHead(request);
      if (done) return done;
    }
    const res = await server.handleWeb(request);
    if (res.status >= 400) return enveloped(request, res);
    // Every answer about an upload names its source_url (creation, HEAD, PATCH): a client that resumes in a new process
    // (its first answer is a HEAD) learns it as the one that created the upload did.
    const id = request.method === "POST" ? idOfUrl(res.headers.get("location") ?? "/") : request.method === "DELETE" ? undefined : idOfUrl(request.url);
    if (id) res.headers.set("X-Source-Url", sourceUrl(id));
    return res;
  }

  const sourceUrl = (id: string) => `${deps.baseUrl()}/uploads/${id}`;

  async function finishedHead(request: Request): Promise<Response | null> {
    const id = idOfUrl(request.url);
    if (!id || !request.headers.get("tus-resumable")) return null;
    const row = (await database.db.select().from(uploads).where(eq(uploads.id, id)).limit(1))[0];
    if (row?.status !== "complete" || row.sizeBytes === null) return null;
    let caller: ReturnType<typeof callerOf>;
    try {
      caller = callerOf(request);
    } catch {
      return null;
    }
    if ("orgId" in caller ? row.orgId !== caller.orgId : caller.slot !== id) return null;
    const size = String(row.sizeBytes);
    const headers = new Headers({
      "Tus-Resumable": "1.0.0",
      "Upload-Offset": size,
      "Upload-Length": size,
      "Cache-Control": "no-store",
      "X-Source-Url": sourceUrl(id),
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Expose-Headers": EXPOSED.join(", "),
    });
    return new Response(null, { status: 200, headers });
  }

  return { server, handle, directory };
}

/** tus's "<Header> header required" (a 403 of its own) as VALIDATION_ERROR naming the header; null for any other 403. */
function missingHeader(message: string): ApiError | null {
  const header = /^(Upload-Offset|Content-Type) header required$/.exec(message)?.[1];
  return header ? ApiError.validation({ [header]: "is required" }, message) : null;
}

/** A tus error as the API's envelope (its own text when tus wrote it), keeping tus's status and headers (CORS, Tus-Resumable). */
async function enveloped(request: Request, res: Response): Promise<Response> {
  const text = request.method === "HEAD" ? "" : await res.text().catch(() => "");
  let body = text;
  if (!text.startsWith("{")) {
    const message = text.trim() || "The upload request was refused.";
    const status = res.status;
    const err =
      status === 404 || status === 410
        ? new ApiError("NOT_FOUND", message)
        : status === 403
          ? // tus answers a PATCH without Upload-Offset or Content-Type with 403: a malformed request, not a permission.
            (missingHeader(message) ?? new ApiError("PERMISSION_DENIED", message))
          : status >= 500
            ? new ApiError("INTERNAL_ERROR", message)
            : ApiError.validation(
                {
                  [status === 413 ? "Upload-Length" : status === 409 ? "Upload-Offset" : status === 412 ? "Tus-Resumable" : status === 415 ? "Content-Type" : "request"]: message,
                },
                message,
              );
    body = JSON.stringify(errorBody(err));
  }
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  headers.set("content-type", "application/json; charset=utf-8");
  if (res.status === 429) headers.set("retry-after", "60");
  return new Response(request.method === "HEAD" ? null : body, { status: res.status, headers });
}

export type TusUploads = ReturnType<typeof createTusUploads>;
