import { Elysia, t } from "elysia";
import { TUS_PATH } from "../http/tus-requests.ts";
import { appendTusUploadDoc, createTusUploadDoc, deleteTusUploadDoc, tusUploadOffsetDoc } from "./tus-route-docs.ts";
import type { TusUploads } from "./tus-uploads.ts";

/**
 * The tus headers and the token, as optional schemas: the OpenAPI plugin
 * documents an operation's `params`/`headers`/`query` schemas and drops a
 * `detail.parameters` list once a path has a parameter. All optional, so
 * Elysia's validation never answers before tus does (a missing header is
 * tus's 412/400/403, in the envelope). Header names are lowercase, as Elysia
 * matches them.
 */
const h = (description: string) => t.Optional(t.String({ description }));
const TUS_RESUMABLE = h("Required on every request but OPTIONS: `1.0.0`.");
const query = t.Object({
  token: t.Optional(t.String({ description: "The presigned token from POST /videos/upload-url/ (`tus_url`), instead of the API key (browsers). Single use, expires with the slot." })),
});
const params = t.Object({ id: t.String({ description: "The upload id (`upl_…`), the last segment of `Location`." }) });

/**
 * The tus routes: every method goes to the tus server as it came (the body is
 * the file: Elysia must not parse it). They are public plugins (before the
 * API's JSON parser and `auth` derive); the app's onRequest hook has already
 * authenticated a request that carries a key (src/http/tus-requests.ts).
 */
export function tusRoutes(tus: TusUploads) {
  const handle = ({ request }: { request: Request }) => tus.handle(request);
  const hidden = { parse: "none" as const, detail: { hide: true } };
  return new Elysia({ name: "tus-routes" })
    .post(`${TUS_PATH}/`, handle, {
      parse: "none",
      detail: createTusUploadDoc(),
      query,
      headers: t.Object({
        "tus-resumable": TUS_RESUMABLE,
        "upload-length": h("Required: the file's size in bytes, a decimal integer (at most `max_bytes`)."),
        "upload-metadata": h("tus metadata (e.g. `filename`), kept with the upload."),
      }),
    })
    .route("HEAD", `${TUS_PATH}/:id`, handle, {
      parse: "none",
      detail: tusUploadOffsetDoc(),
      params,
      query,
      headers: t.Object({ "tus-resumable": TUS_RESUMABLE }),
    })
    .patch(`${TUS_PATH}/:id`, handle, {
      parse: "none",
      detail: appendTusUploadDoc(),
      params,
      query,
      headers: t.Object({ "tus-resumable": TUS_RESUMABLE, "upload-offset": h("Required: where this body starts, a decimal integer.") }),
    })
    .delete(`${TUS_PATH}/:id`, handle, {
      parse: "none",
      detail: deleteTusUploadDoc(),
      params,
      query,
      headers: t.Object({ "tus-resumable": TUS_RESUMABLE }),
    })
    .options(`${TUS_PATH}/`, handle, hidden)
    .options(`${TUS_PATH}/:id`, handle, hidden);
}
