import { Elysia } from "elysia";
import { success } from "../http/envelope.ts";
import type { UploadStore } from "./upload-store.ts";

/** PUT /uploads/<id>?expires=&sig=: the presigned target; the signature is the credential. */
export function uploadRoutes(uploads: UploadStore) {
  return new Elysia({ name: "upload-routes" }).put(
    "/uploads/:id",
    async ({ params, query, request }) => {
      const q = query as Record<string, string | undefined>;
      const slot = await uploads.claim(params.id, q.expires ?? null, q.sig ?? null);
      const size = await uploads.receive(params.id, request.body, slot.maxBytes);
      return success({ upload_id: params.id, size_bytes: String(size) }, "Upload received.");
    },
    // The raw file is streamed from request.body; Elysia must not parse it.
    { parse: "none", detail: { hide: true } },
  );
}
