import type { Logger } from "../log.ts";
import { routedPath } from "./canonical-request.ts";
import { serviceUnavailable } from "./domain-error-map.ts";
import { errorResponse } from "./envelope.ts";
import { isTusPath } from "./tus-requests.ts";

/**
 * Requests whose time is the client's, not ours: upload bodies (the PUT of a
 * presigned upload, tus PATCH and creation-with-upload) take as long as the
 * bytes take to arrive.
 */
function unbounded(req: Request): boolean {
  if (req.method === "PUT" || req.method === "PATCH") return true;
  return isTusPath(routedPath(req.url));
}

/**
 * Every other request is answered within `ms`: if the handler has not produced
 * its response by then (a dependency hung past its own bound, a queue stuck
 * behind one), the client gets 503 SERVICE_UNAVAILABLE with Retry-After
 * instead of waiting. Only the wait for the response's head is bounded; a body
 * streamed afterwards (media) runs on. The handler itself runs on, since it
 * cannot be cancelled: a write it was waiting for may still land, which is
 * why POST /videos/ is idempotent by `source_url` (docs/decisions.md).
 */
export function withRequestDeadline(handle: (req: Request) => Response | Promise<Response>, ms: number, logger: Logger): (req: Request) => Response | Promise<Response> {
  if (!(ms > 0)) return handle;
  return (req) => {
    const out = handle(req);
    if (out instanceof Response || unbounded(req)) return out;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<Response>((resolve) => {
      timer = setTimeout(() => {
        logger.warn("Request over its deadline: answered 503", { method: req.method, path: routedPath(req.url), deadline_ms: ms });
        resolve(errorResponse(serviceUnavailable()));
      }, ms);
    });
    return Promise.race([out, deadline]).finally(() => clearTimeout(timer));
  };
}
