import type { ErrorCode } from "../http/api-error.ts";
import { errorEnvelope, operationId } from "../http/openapi-docs.ts";

const tags = ["Videos"];

/**
 * A tus refusal: the error envelope limited to the codes this status carries
 * for this operation (the generic envelope listing every code would make the
 * document's per-operation codes meaningless). HEAD answers the same status
 * and headers with no body.
 */
type Refusal = { codes: ErrorCode[]; why: string };
const R = (why: string, ...codes: ErrorCode[]): Refusal => ({ codes, why });
const BAD_HEADER = "a tus header is malformed (tus's `Invalid <header>`)";
/** Every tus operation can meet these: a bad key, the key's request limit, a fault. */
const COMMON_REFUSALS: Record<string, Refusal> = {
  "401": R("INVALID_API_KEY: the key is missing or wrong (and no `token`).", "INVALID_API_KEY"),
  "412": R("VALIDATION_ERROR: `Tus-Resumable` missing (`details.Tus-Resumable`).", "VALIDATION_ERROR"),
  "429": R("RATE_LIMITED: over the API key's request limit (with the key; `Retry-After`).", "RATE_LIMITED"),
  "500": R("INTERNAL_ERROR: a fault of the service or its storage.", "INTERNAL_ERROR"),
};

/**
 * OpenAPI `detail` of a tus operation. Not `doc()`: a tus success is a status
 * and headers with no JSON body, and its refusals keep tus's statuses (409,
 * 412, 413, …), which the spec's code → status table does not list.
 */
function tusDoc(opts: {
  operationId: string;
  summary: string;
  description: string;
  success: { status: number; description: string; headers: Record<string, string> };
  refusals: Record<string, Refusal>;
}) {
  const headers = Object.fromEntries(Object.entries(opts.success.headers).map(([name, description]) => [name, { description, schema: { type: "string" } }]));
  const responses: Record<string, unknown> = { [opts.success.status]: { description: opts.success.description, headers } };
  const refusals = Object.entries({ ...COMMON_REFUSALS, ...opts.refusals }).sort(([a], [b]) => Number(a) - Number(b));
  for (const [status, { codes, why }] of refusals) {
    responses[status] = {
      description: why,
      content: { "application/json": { schema: errorEnvelope(codes) } },
      ...(codes.includes("RATE_LIMITED") ? { headers: { "Retry-After": { description: "Seconds to wait.", schema: { type: "integer" } } } } : {}),
    };
  }
  // Elysia types the OpenAPI objects more narrowly than these plain JSON ones.
  return { operationId: operationId(opts.operationId), tags, summary: opts.summary, description: opts.description, responses } as any;
}

/** The answers every method on an existing upload shares: its id, the token, the request's own headers. */
const ON_UPLOAD: Record<string, Refusal> = {
  "400": R(`VALIDATION_ERROR: ${BAD_HEADER}.`, "VALIDATION_ERROR"),
  "403": R('PERMISSION_DENIED: the `token` is invalid or expired (`details: ["upload.token"]`).', "PERMISSION_DENIED"),
  "404": R("NOT_FOUND: no such upload, another organization's, finished, expired, or not the token's.", "NOT_FOUND"),
};

/** The OpenAPI details of the tus routes (tus-routes.ts): a fresh object for each app. */
export const createTusUploadDoc = () =>
  tusDoc({
    operationId: "createTusUpload",
    summary: "Create a resumable upload (tus)",
    description:
      "The tus 1.0 protocol (extensions creation, creation-with-upload, termination): POST with `Upload-Length`, then PATCH the bytes to `Location` (`Content-Type: application/offset+octet-stream`, `Upload-Offset`), HEAD `Location` to learn the offset after a cut and resume from there. Authenticated by the API key, or by `?token=` from POST /videos/upload-url/ (its `tus_url`; single use, for browsers). Once complete, register `X-Source-Url` (`{BASE_URL}/uploads/{id}`, on every answer about the upload: this one, HEAD and PATCH) with POST /videos/, as for a presigned upload; the upload's own URL (`Location`) is accepted as `source_url` too, so a client resuming from another process needs nothing more than the URL it resumed. `Upload-Length` over `max_bytes` is 413; at most `UPLOAD_CONCURRENT_PER_ORG` unfinished uploads per organization (429); creating with the key counts in the upload-url rate limit (60/min per organization). Unfinished uploads are deleted once idle past their expiry (1 h after the last PATCH). Errors are the envelope with tus's status (400, 409, 412, 413 carry VALIDATION_ERROR).",
    refusals: {
      "400": R(`VALIDATION_ERROR: \`Upload-Length\` missing or 0, invalid \`Upload-Metadata\`, or ${BAD_HEADER}.`, "VALIDATION_ERROR"),
      "403": R('PERMISSION_DENIED: the `token` is invalid or expired (`details: ["upload.token"]`).', "PERMISSION_DENIED"),
      "404": R("NOT_FOUND: the token's upload slot is unknown or already used (single use).", "NOT_FOUND"),
      "409": R("TRANSCODE_NOT_CONFIGURED: the organization has no transcoding settings; nothing is created (as on POST /videos/).", "TRANSCODE_NOT_CONFIGURED"),
      "413": R("VALIDATION_ERROR: `Upload-Length` over `max_bytes` (`details.Upload-Length`).", "VALIDATION_ERROR"),
      "429": R("RATE_LIMITED: over the API key's request limit, the upload-url limit (60/min per organization), or `UPLOAD_CONCURRENT_PER_ORG` unfinished uploads (`Retry-After`).", "RATE_LIMITED"),
      "501": R("INTERNAL_ERROR: `Upload-Defer-Length` or `Upload-Concat`: tus extensions this service does not offer.", "INTERNAL_ERROR"),
    },
    success: {
      status: 201,
      description: "Created (no body).",
      headers: { Location: "The upload's URL (HEAD, PATCH, DELETE).", "X-Source-Url": "The `source_url` to register once the upload is complete.", "Tus-Resumable": "`1.0.0`" },
    },
  });

export const tusUploadOffsetDoc = () =>
  tusDoc({
    operationId: "getTusUploadOffset",
    summary: "Offset of a resumable upload (tus)",
    description: "How many bytes the service holds: resume the PATCH from `Upload-Offset`. A finished upload answers its full length. Another organization's id is 404 as a missing one.",
    refusals: ON_UPLOAD,
    success: {
      status: 200,
      description: "No body.",
      headers: { "Upload-Offset": "Bytes received.", "Upload-Length": "The announced size.", "X-Source-Url": "The `source_url` to register once complete.", "Tus-Resumable": "`1.0.0`" },
    },
  });

export const appendTusUploadDoc = () =>
  tusDoc({
    operationId: "appendTusUpload",
    summary: "Append to a resumable upload (tus)",
    description:
      "The body is the bytes from `Upload-Offset` on (`Content-Type: application/offset+octet-stream`; another type is 400). 409 when `Upload-Offset` is not the service's offset (HEAD first). The last byte completes the upload: its `source_url` can then be registered.",
    refusals: {
      ...ON_UPLOAD,
      "400": R(`VALIDATION_ERROR: a \`Content-Type\` other than \`application/offset+octet-stream\`, or ${BAD_HEADER}.`, "VALIDATION_ERROR"),
      "403": R(
        'PERMISSION_DENIED: the `token` is invalid or expired (`details: ["upload.token"]`). VALIDATION_ERROR: `Upload-Offset` or `Content-Type` missing (tus answers 403; `details` names the header).',
        "PERMISSION_DENIED",
        "VALIDATION_ERROR",
      ),
      "409": R("VALIDATION_ERROR: `Upload-Offset` is not the service's offset (HEAD first; `details.Upload-Offset`).", "VALIDATION_ERROR"),
      "413": R("VALIDATION_ERROR: the body goes past `Upload-Length` (`details.Upload-Length`).", "VALIDATION_ERROR"),
    },
    success: {
      status: 204,
      description: "Appended (no body).",
      headers: { "Upload-Offset": "The new offset.", "X-Source-Url": "The `source_url` to register once complete.", "Tus-Resumable": "`1.0.0`" },
    },
  });

export const deleteTusUploadDoc = () =>
  tusDoc({
    operationId: "deleteTusUpload",
    summary: "Abandon a resumable upload (tus)",
    description: "Deletes an unfinished upload and its bytes (termination extension).",
    refusals: ON_UPLOAD,
    success: { status: 204, description: "Deleted (no body).", headers: { "Tus-Resumable": "`1.0.0`" } },
  });
