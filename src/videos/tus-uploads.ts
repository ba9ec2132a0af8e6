import { FileStore } from "@tus/file-store";
import { Server, type ServerOptions } from "@tus/server";
import { eq } from "drizzle-orm";
import { join } from "node:path";
import { uploads } from "../db/schema/index.ts";
import { authByRequest } from "../http/api-context.ts";
import { TUS_PATH } from "../http/tus-requests.ts";
import { newId } from "../ids.ts";
import { callerOf, idOfUrl, newUploadId, ownedBy } from "./tus-caller.ts";
import { enveloped } from "./tus-envelope.ts";
import { checkIncoming, createSlot, finishUpload, type TusDeps } from "./tus-hooks.ts";

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
 * upload once and then reaches only it (tus-caller.ts); the hooks are tus-hooks.ts.
 */
export function createTusUploads(deps: TusDeps) {
  const directory = tusDirectory(deps.store.dataDir);
  const server = new Server(serverOptions(deps, directory) as ServerOptions & { datastore: FileStore });
  // A terminated upload (DELETE) gives its slot back to the organization's bound: the row goes with its files.
  server.on("POST_TERMINATE" as never, (_req: Request, _res: Response, id: string) => {
    void deps.database.write((tx) => tx.delete(uploads).where(eq(uploads.id, id))).catch((err) => deps.logger.warn("Could not delete a terminated upload's slot", { err, upload_id: id }));
  });
  return { server, handle: (request: Request) => handleTus(deps, server, request), directory };
}

/** The tus server's configuration: the file store, URLs and ids, CORS lists and the hooks. */
function serverOptions(deps: TusDeps, directory: string): Omit<ServerOptions, "locker"> & { datastore: FileStore } {
  const datastore = new FileStore({ directory });
  // No deferred length (the size is checked against max_bytes at creation: 413) and no tus
  // expiration (retention removes abandoned uploads, src/retention): both left out of Tus-Extension.
  datastore.extensions = ["creation", "creation-with-upload", "termination"];
  return {
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
    namingFunction: (req) => newUploadId(deps.secret, req, () => newId("upl")),
    allowedHeaders: EXTRA_ALLOWED,
    exposedHeaders: EXTRA_EXPOSED,
    onIncomingRequest: (req, id) => checkIncoming(deps, req, id),
    onUploadCreate: (req, upload) => createSlot(deps, req, upload),
    onUploadFinish: async (_req, upload) => {
      await finishUpload(deps, directory, upload.id, upload.size ?? upload.offset);
      return {};
    },
  };
}

const sourceUrl = (deps: TusDeps, id: string) => `${deps.baseUrl()}/uploads/${id}`;

/**
 * One tus request. A HEAD on a finished upload answers its full offset (a
 * client resuming after the last PATCH's answer was lost learns it is done;
 * the tus store no longer holds it). Errors are the envelope, with the
 * status tus gives them (413, 409, 412, …) so tus clients still understand.
 */
async function handleTus(deps: TusDeps, server: Server, request: Request): Promise<Response> {
  if (request.method === "HEAD") {
    const done = await finishedHead(deps, request);
    if (done) return done;
  }
  const res = await server.handleWeb(request);
  if (res.status >= 400) return enveloped(request, res);
  // Every answer about an upload names its source_url (creation, HEAD, PATCH): a client that resumes in a new process
  // (its first answer is a HEAD) learns it as the one that created the upload did.
  const id = request.method === "POST" ? idOfUrl(res.headers.get("location") ?? "/") : request.method === "DELETE" ? undefined : idOfUrl(request.url);
  if (id) res.headers.set("X-Source-Url", sourceUrl(deps, id));
  return res;
}

async function finishedHead(deps: TusDeps, request: Request): Promise<Response | null> {
  const id = idOfUrl(request.url);
  if (!id || !request.headers.get("tus-resumable")) return null;
  const row = (await deps.database.db.select().from(uploads).where(eq(uploads.id, id)).limit(1))[0];
  if (row?.status !== "complete" || row.sizeBytes === null) return null;
  let caller: ReturnType<typeof callerOf>;
  try {
    caller = callerOf(deps.secret, request);
  } catch {
    return null;
  }
  if (!ownedBy(caller, row)) return null;
  const size = String(row.sizeBytes);
  const headers = new Headers({
    "Tus-Resumable": "1.0.0",
    "Upload-Offset": size,
    "Upload-Length": size,
    "Cache-Control": "no-store",
    "X-Source-Url": sourceUrl(deps, id),
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": EXPOSED.join(", "),
  });
  return new Response(null, { status: 200, headers });
}

export type TusUploads = ReturnType<typeof createTusUploads>;
