import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import { ApiError } from "../http/api-error.ts";
import { readBoundedText } from "../http/bounded-body.ts";
import { clientAddressGroup } from "../http/client-address.ts";
import { errorResponse, jsonResponse } from "../http/envelope.ts";
import type { RateLimiter } from "../http/rate-limiter.ts";
import { BODY_LIMITS, drmLicenceChecks } from "../http/route-limits.ts";
import type { Logger } from "../log.ts";
import { KID, LICENCE_QUERY, licenceDoc, MAX_KIDS } from "./drm-licence-doc.ts";
import type { DrmKeys } from "./drm-keys.ts";
import type { DrmTokens } from "./drm-tokens.ts";

/** Players call the licence server from any origin (EME runs in the page); no cookies are involved. */
const CORS = { "access-control-allow-origin": "*", "access-control-expose-headers": "retry-after" };

/** `licencePath(id)` (drm-tokens.ts), as a route. */
const PATH = "/drm/clearkey/:videoId/license";

const b64url = (hex: string) => Buffer.from(hex, "hex").toString("base64url");

function refuse(err: ApiError): Response {
  const res = errorResponse(err);
  for (const [k, v] of Object.entries(CORS)) res.headers.set(k, v);
  return res;
}

const TOKEN_MESSAGES = {
  missing: "A licence token is required: use the video's drm_license_url as given.",
  malformed: "The licence token is not valid for this video.",
  expired: "The licence token has expired: mint a fresh one (POST /videos/{id}/drm-token/ or GET /videos/{id}/).",
} as const;

/** The request body: `{"kids": [<base64url>...], "type": "temporary"}`, or the field it fails on. */
function parseLicenceRequest(text: string): { kids: string[] } | { error: Record<string, string> } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { error: { body: "is not valid JSON" } };
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { error: { body: 'must be an object {"kids": [...], "type": "temporary"}' } };
  const { kids, type } = body as { kids?: unknown; type?: unknown };
  if (!Array.isArray(kids) || kids.length === 0 || kids.length > MAX_KIDS || !kids.every((k) => typeof k === "string" && KID.test(k))) {
    return { error: { kids: `must be a list of 1 to ${MAX_KIDS} key ids, each 16 bytes in base64url without padding` } };
  }
  if (type !== undefined && type !== "temporary") return { error: { type: 'must be "temporary" (persistent licences are not offered)' } };
  return { kids };
}

interface LicenceDeps {
  keys: DrmKeys;
  tokens: DrmTokens;
  limiter: RateLimiter;
  logger: Logger;
  trustProxy: number;
  /** Issue 27: a signed video's licence also needs its playback token (`?playback_token=`), and a restriction judges the Referer. */
  gate: (request: Request, videoId: string) => Promise<{ token: string | null } | Response>;
}

/**
 * The W3C ClearKey licence service of DRM videos: `POST /drm/clearkey/{video id}/license?token=`
 * answers the EME licence request with a JWK set holding the keys of that video among the
 * requested key ids (unknown ones omitted). The token (src/videos/drm-tokens.ts) is the only
 * credential: no API key, CORS open, rate limited per token and per client address.
 */
export function drmLicenceRoutes(deps: LicenceDeps) {
  return new Elysia({ name: "drm-licence-routes" })
    .options(
      PATH,
      ({ request }) =>
        new Response(null, {
          status: 204,
          headers: {
            ...CORS,
            "access-control-allow-methods": "POST, OPTIONS",
            "access-control-allow-headers": request.headers.get("access-control-request-headers") ?? "content-type",
            "access-control-max-age": "86400",
          },
        }),
      { detail: { hide: true } },
    )
    .post(PATH, ({ params, request, server }) => serveLicence(deps, params.videoId, request, server?.requestIP(request)?.address), {
      // The body is read here (BODY_LIMITS.drmLicence, counted while read), not by the API's JSON parser: players may send any content type.
      parse: "none",
      query: LICENCE_QUERY,
      detail: licenceDoc(),
    });
}

/** One licence request: rate limit, token, playback gate, body, then the video's key among the requested ids. */
async function serveLicence(deps: LicenceDeps, videoId: string, request: Request, peer: string | undefined): Promise<Response> {
  const token = new URL(request.url).searchParams.get("token");
  const refused = (await rateLimited(deps, request, peer, token)) ?? tokenRefused(deps, videoId, token);
  if (refused) return refused;

  const grant = await deps.gate(request, videoId);
  if (grant instanceof Response) return grant;

  // Counted while read: a declared length over the limit is refused unread, a chunked body is cut at it (413).
  let text: string;
  try {
    text = await readBoundedText(request, BODY_LIMITS.drmLicence);
  } catch (err) {
    if (err instanceof ApiError) return refuse(err);
    throw err;
  }
  const parsed = parseLicenceRequest(text);
  if ("error" in parsed) return refuse(ApiError.validation(parsed.error));

  const key = await deps.keys.forLicence(videoId);
  const wanted = key ? b64url(key.keyId) : null;
  const keys = key && parsed.kids.includes(wanted!) ? [{ kty: "oct", kid: wanted!, k: b64url(key.key) }] : [];
  deps.logger.info("DRM licence served", { video_id: videoId, kids_requested: parsed.kids.length, keys: keys.length });
  return jsonResponse({ keys, type: "temporary" }, 200, { ...CORS, "cache-control": "no-store" });
}

/**
 * 429 past the per-token or per-address allowance, else null. Counted before anything else, so guessing tokens
 * costs the guesser's allowance. IPv6 counts by its /64, as RTMP and WHIP do: one host rotating through its block is one client.
 */
async function rateLimited(deps: LicenceDeps, request: Request, peer: string | undefined, token: string | null): Promise<Response | null> {
  const address = clientAddressGroup(request, peer, deps.trustProxy);
  const digest = token ? createHash("sha256").update(token).digest("hex").slice(0, 32) : null;
  const pending = deps.limiter.hit(drmLicenceChecks(address, digest));
  const verdict = pending instanceof Promise ? await pending : pending;
  return verdict.ok ? null : refuse(new ApiError("RATE_LIMITED", undefined, undefined, { "retry-after": String(verdict.retryAfterSeconds) }));
}

/** 403 for a missing, invalid, expired or other video's token, else null. */
function tokenRefused(deps: LicenceDeps, videoId: string, token: string | null): Response | null {
  const checked = deps.tokens.verify(videoId, token);
  if (checked === "ok") return null;
  deps.logger.info("DRM licence refused", { video_id: videoId, reason: checked });
  return refuse(new ApiError("PERMISSION_DENIED", TOKEN_MESSAGES[checked], ["drm.token"]));
}
