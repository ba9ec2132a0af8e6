import { authByRequest } from "../http/api-context.ts";
import { ApiError } from "../http/api-error.ts";
import { errorBody } from "../http/envelope.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";
import { readTusToken } from "./tus-token.ts";

/** Who makes a tus request: the organization of its key, or the slot its presigned token names. */
export type TusCaller = { orgId: string; transcoding: boolean } | { slot: string; expires: number };

/** The upload id a tus URL names (its last path segment; the query may carry the token). */
export const idOfUrl = (url: string) => /\/(upl_[0-9A-Za-z]+)\/?$/.exec(new URL(url, "http://x").pathname)?.[1];

/** A tus error the hooks throw: the body is already the envelope. */
export const tusError = (err: ApiError, status = err.status) => ({ status_code: status, body: JSON.stringify(errorBody(err)) });

export const notFound = () => tusError(new ApiError("NOT_FOUND", "No upload at this URL."));

/** The caller of a request (key or token); a bad token is 403 `details: ["upload.token"]`. */
export function callerOf(secret: ServerSecret, req: Request): TusCaller {
  const auth = authByRequest.get(req);
  if (auth) return { orgId: auth.org.id, transcoding: auth.org.settings.transcoding !== null };
  const token = readTusToken(secret, new URL(req.url).searchParams.get("token"));
  if (!token) throw tusError(new ApiError("PERMISSION_DENIED", "The upload token is invalid.", ["upload.token"]));
  return { slot: token.uploadId, expires: token.expires };
}

/** The id of a new upload: a fresh one for the key, the token's slot (unless the token has expired: 403). */
export function newUploadId(secret: ServerSecret, req: Request, fresh: () => string): string {
  const caller = callerOf(secret, req);
  if ("orgId" in caller) return fresh();
  if (caller.expires * 1000 < Date.now()) throw tusError(new ApiError("PERMISSION_DENIED", "The upload token has expired.", ["upload.token"]));
  return caller.slot;
}

/** Whether an upload row is the caller's: its organization's (key), or the token's own slot. */
export const ownedBy = (caller: TusCaller, row: { id: string; orgId: string }) => ("orgId" in caller ? row.orgId === caller.orgId : caller.slot === row.id);
