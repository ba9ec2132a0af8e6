import { Elysia } from "elysia";
import { ApiError } from "../http/api-error.ts";
import { readBoundedText } from "../http/bounded-body.ts";
import { clientAddress } from "../http/client-address.ts";
import { BODY_LIMITS } from "../http/route-limits.ts";
import type { Logger } from "../log.ts";
import { type MediaGate, OPEN_GATE } from "../storage/media-routes.ts";
import { CORS_HEADERS, preflight, sdpAnswer, webrtcError } from "./webrtc-answers.ts";
import { WHEP_DOC, WHEP_END_DOC, WHEP_QUERY, WHIP_DOC, WHIP_END_DOC } from "./webrtc-docs.ts";
import { WebrtcRefusal, type WebrtcModule } from "./webrtc-module.ts";

const TOKEN = /^[0-9a-f]{40}$/;

async function readOffer(request: Request): Promise<string | Response> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/sdp") return webrtcError("UNSUPPORTED_MEDIA_TYPE", "The offer must be sent with Content-Type: application/sdp.");
  // Counted while read (src/http/bounded-body.ts): a chunked offer costs at most the limit, never its whole size.
  return readBoundedText(request, BODY_LIMITS.sdpOffer).catch((err) => {
    if (err instanceof ApiError && err.code === "PAYLOAD_TOO_LARGE") return webrtcError("PAYLOAD_TOO_LARGE", err.message);
    throw err;
  });
}

function refusal(err: unknown, logger: Logger): Response {
  if (err instanceof WebrtcRefusal) return webrtcError(err.code, err.message);
  logger.error("WebRTC request failed", { err });
  return webrtcError("WEBRTC_UNAVAILABLE", "The WebRTC session could not be set up. Retry shortly.");
}

const bearer = (request: Request) => /^Bearer\s+(\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";

/**
 * WHIP (RFC 9725) and WHEP beside each stream's hls_url, with the same
 * token: `…/live/<token>/whip` and `…/live/<token>/whep`. No trickle ICE
 * and no ICE restart (PATCH answers 405, as the RFC asks of a server without
 * them): the answer carries every candidate. A WHEP offer passes the
 * playback gate first (issue 27), as `hls_url` does: a signed stream needs
 * `?token=` (aud `v`, sub the stream's id), a restriction judges the Referer.
 */
export function webrtcRoutes(deps: { webrtc: WebrtcModule; baseUrl: () => string; logger: Logger; trustProxy: number; gate?: MediaGate }) {
  const { webrtc, logger } = deps;
  const gate = deps.gate ?? OPEN_GATE;
  const sessionUrl = (token: string, kind: "whip" | "whep") => (id: string) => `${deps.baseUrl()}/live/${token}/${kind}/${id}`;
  const notFound = () => webrtcError("NOT_FOUND", "Resource not found.");
  const noPatch = () => webrtcError("METHOD_NOT_ALLOWED", "Trickle ICE and ICE restarts are not supported: the answer carries every candidate.", { allow: "DELETE, OPTIONS" });
  const hide = { detail: { hide: true } };
  const raw = { parse: "none" as const, ...hide };

  return new Elysia({ name: "webrtc-routes" })
    .options("/live/:token/whip", () => preflight(), hide)
    .options("/live/:token/whep", () => preflight(), hide)
    .options("/live/:token/whip/:session", () => preflight(), hide)
    .options("/live/:token/whep/:session", () => preflight(), hide)
    .post(
      "/live/:token/whip",
      async ({ params, request, server }) => {
        if (!TOKEN.test(params.token)) return notFound();
        const offer = await readOffer(request);
        if (offer instanceof Response) return offer;
        try {
          // The WHIP client's address (behind TRUST_PROXY hops, the forwarded one): the RTMP per-IP limit applies to it
          // (its relay comes from 127.0.0.1 and is not counted).
          const client = clientAddress(request, server?.requestIP(request)?.address, deps.trustProxy);
          const r = await webrtc.publish(params.token, bearer(request), offer, sessionUrl(params.token, "whip"), client);
          return sdpAnswer(r.answer, r.location);
        } catch (err) {
          return refusal(err, logger);
        }
      },
      { parse: "none", detail: WHIP_DOC },
    )
    .delete("/live/:token/whip/:session", ({ params }) => (webrtc.endPublish(params.token, params.session) ? new Response(null, { status: 200, headers: CORS_HEADERS }) : notFound()), {
      detail: WHIP_END_DOC,
    })
    .patch("/live/:token/whip/:session", () => noPatch(), raw)
    .post(
      "/live/:token/whep",
      async ({ params, request }) => {
        if (!TOKEN.test(params.token)) return notFound();
        // Before the offer is read: a refused viewer costs no body and no WebRTC session. Its 403 is the envelope with CORS.
        const grant = await gate(request, params.token, "whep");
        if (grant instanceof Response) return grant;
        const offer = await readOffer(request);
        if (offer instanceof Response) return offer;
        try {
          const r = await webrtc.play(params.token, offer, sessionUrl(params.token, "whep"));
          return sdpAnswer(r.answer, r.location);
        } catch (err) {
          return refusal(err, logger);
        }
      },
      { parse: "none", query: WHEP_QUERY, detail: WHEP_DOC },
    )
    .delete("/live/:token/whep/:session", ({ params }) => (webrtc.endPlay(params.token, params.session) ? new Response(null, { status: 200, headers: CORS_HEADERS }) : notFound()), {
      detail: WHEP_END_DOC,
    })
    .patch("/live/:token/whep/:session", () => noPatch(), raw);
}
