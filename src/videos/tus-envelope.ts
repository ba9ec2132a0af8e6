import { ApiError } from "../http/api-error.ts";
import { errorBody } from "../http/envelope.ts";

/** tus's "<Header> header required" (a 403 of its own) as VALIDATION_ERROR naming the header; null for any other 403. */
function missingHeader(message: string): ApiError | null {
  const header = /^(Upload-Offset|Content-Type) header required$/.exec(message)?.[1];
  return header ? ApiError.validation({ [header]: "is required" }, message) : null;
}

/** A tus error as the API's envelope (its own text when tus wrote it), keeping tus's status and headers (CORS, Tus-Resumable). */
export async function enveloped(request: Request, res: Response): Promise<Response> {
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
