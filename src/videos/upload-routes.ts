import { Elysia } from "elysia";
import { DomainError } from "../errors.ts";
import { domainErrorResponse } from "../http/domain-error-map.ts";
import { jsonResponse, success } from "../http/envelope.ts";
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

/** PUT /uploads/<id>?expires=&sig=: the presigned target; the signature is the credential. */
export function uploadRoutes(uploads: UploadStore) {
  return new Elysia({ name: "upload-routes" })
    .put(
      "/uploads/:id",
      async ({ params, query, request }) => {
        const q = query as Record<string, string | undefined>;
        try {
          const slot = await uploads.claim(params.id, q.expires ?? null, q.sig ?? null);
          const size = await uploads.receive(params.id, request.body, slot.maxBytes);
          return jsonResponse(success({ upload_id: params.id, size_bytes: String(size) }, "Upload received."), 200, UPLOAD_CORS);
        } catch (err) {
          // A refusal a browser page can read (the app's error handler adds no CORS headers).
          if (!(err instanceof DomainError)) throw err;
          const res = domainErrorResponse(err);
          for (const [k, v] of Object.entries(UPLOAD_CORS)) res.headers.set(k, v);
          return res;
        }
      },
      // The raw file is streamed from request.body; Elysia must not parse it.
      { parse: "none", detail: { hide: true } },
    )
    .options("/uploads/:id", () => new Response(null, { status: 204, headers: PREFLIGHT }), { detail: { hide: true } });
}
