import { Elysia, type Static, t } from "elysia";
import { DomainError } from "../errors.ts";
import { domainErrorResponse } from "../http/domain-error-map.ts";
import { jsonResponse, success } from "../http/envelope.ts";
import { type Equals, errorResponses, operationId, strictObject, successEnvelope } from "../http/openapi-docs.ts";
import { queryInteger } from "../http/input.ts";
import type { UploadStore } from "./upload-store.ts";

/**
 * CORS of the presigned upload URL: any origin, since the URL itself is the
 * credential (signed, single use, expiring) and no cookie is involved; a page
 * on the customer's site PUTs the file straight here. Content-Length is
 * listed for clients that name it, although browsers set it themselves.
 */
export const UPLOAD_CORS = { "access-control-allow-origin": "*", "access-control-expose-headers": "X-Request-Id" };
const PREFLIGHT = {
  ...UPLOAD_CORS,
  "access-control-allow-methods": "PUT, OPTIONS",
  "access-control-allow-headers": "Content-Type, Content-Length, Content-MD5, X-Requested-With, X-Request-Id",
  "access-control-max-age": "86400",
};

/** `data` of a received upload: `size_bytes` a decimal string, as every size in the API. */
const UploadReceivedSchema = strictObject({
  upload_id: t.String({ description: "The upload id (`upl_…`)." }),
  size_bytes: t.String({ description: "Bytes received, a decimal integer." }),
});
const received = (id: string, size: number) => ({ upload_id: id, size_bytes: String(size) });
const _receivedMatches: Equals<Static<typeof UploadReceivedSchema>, ReturnType<typeof received>> = true;

const CORS_HEADERS = { "Access-Control-Allow-Origin": { description: "`*`: the signed URL is the credential.", schema: { type: "string" } } };
/** Its OpenAPI operation: no API key (`security: []`), the signature in the query, the file as the body. */
const putDoc = {
  operationId: operationId("uploadFile"),
  tags: ["Videos"],
  summary: "Upload a file to a presigned URL",
  description:
    "The `upload_url` of POST /videos/upload-url/ (`method: PUT`), used exactly as given: `?expires=&sig=` is the credential, so no API key. The body is the file's bytes (any `Content-Type`), at most the slot's `max_bytes`. Single use: a second PUT to the same URL is 404. Then register `source_url` with POST /videos/. CORS: any origin, OPTIONS preflight answered, so a browser page can PUT directly.",
  security: [],
  requestBody: { required: true, description: "The file's bytes.", content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } } },
  responses: {
    200: { description: "Received: the file is stored, register `source_url` next.", headers: CORS_HEADERS, content: { "application/json": { schema: successEnvelope(UploadReceivedSchema) } } },
    ...errorResponses(["PERMISSION_DENIED", "NOT_FOUND", "VALIDATION_ERROR", "INTERNAL_ERROR"]),
  },
} as never;
const uploadParams = t.Object({ id: t.String({ description: "The upload id (`upl_…`)." }) });
const uploadQuery = t.Object({
  expires: t.Optional(queryInteger({ description: "Expiry, Unix seconds, as given in `upload_url`." })),
  sig: t.Optional(t.String({ description: 'The signature, as given in `upload_url`. A wrong or expired one is 403 PERMISSION_DENIED (`details: ["upload.signature"]`).' })),
});

/** PUT /uploads/<id>?expires=&sig=: the presigned target; the signature is the credential. */
export function uploadRoutes(uploads: UploadStore) {
  return new Elysia({ name: "upload-routes" })
    .put(
      "/uploads/:id",
      async ({ params, query, request }) => {
        try {
          const slot = await uploads.claim(params.id, query.expires ?? null, query.sig ?? null);
          const size = await uploads.receive(params.id, request.body, slot.maxBytes);
          return jsonResponse(success(received(params.id, size), "Upload received."), 200, UPLOAD_CORS);
        } catch (err) {
          // A refusal a browser page can read (the app's error handler adds no CORS headers).
          if (!(err instanceof DomainError)) throw err;
          const res = domainErrorResponse(err);
          for (const [k, v] of Object.entries(UPLOAD_CORS)) res.headers.set(k, v);
          return res;
        }
      },
      // The raw file is streamed from request.body; Elysia must not parse it. The query and params
      // schemas are all strings, optional where they may be missing: they document, never refuse
      // (a missing signature is the route's own 403).
      { parse: "none", params: uploadParams, query: uploadQuery, detail: putDoc },
    )
    .options("/uploads/:id", () => new Response(null, { status: 204, headers: PREFLIGHT }), { detail: { hide: true } });
}
