import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import { ApiError } from "../http/api-error.ts";
import { readBoundedText } from "../http/bounded-body.ts";
import { clientAddressGroup } from "../http/client-address.ts";
import { errorResponse, jsonResponse } from "../http/envelope.ts";
import { errorResponses, operationId } from "../http/openapi-docs.ts";
import type { RateLimiter } from "../http/rate-limiter.ts";
import { BODY_LIMITS, drmLicenceChecks } from "../http/route-limits.ts";
import type { Logger } from "../log.ts";
import type { DrmKeys } from "./drm-keys.ts";
import type { DrmTokens } from "./drm-tokens.ts";

/** Key ids one request may name (a video has one). */
const MAX_KIDS = 16;
/** A 16-byte key id in base64url without padding (W3C EME ClearKey). */
const KID = /^[A-Za-z0-9_-]{22}$/;

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

/**
 * The W3C ClearKey licence service of DRM videos: `POST /drm/clearkey/{video id}/license?token=`
 * answers the EME licence request with a JWK set holding the keys of that video among the
 * requested key ids (unknown ones omitted). The token (src/videos/drm-tokens.ts) is the only
 * credential: no API key, CORS open, rate limited per token and per client address.
 */
export function drmLicenceRoutes(deps: { keys: DrmKeys; tokens: DrmTokens; limiter: RateLimiter; logger: Logger; trustProxy: number }) {
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
    .post(
      PATH,
      async ({ params, request, server }) => {
        const videoId = params.videoId;
        const token = new URL(request.url).searchParams.get("token");
        // Counted before anything else, so guessing tokens costs the guesser's allowance.
        // IPv6 counts by its /64, as RTMP and WHIP do: one host rotating through its block is one client.
        const address = clientAddressGroup(request, server?.requestIP(request)?.address, deps.trustProxy);
        const digest = token ? createHash("sha256").update(token).digest("hex").slice(0, 32) : null;
        const pending = deps.limiter.hit(drmLicenceChecks(address, digest));
        const verdict = pending instanceof Promise ? await pending : pending;
        if (!verdict.ok) return refuse(new ApiError("RATE_LIMITED", undefined, undefined, { "retry-after": String(verdict.retryAfterSeconds) }));

        const checked = deps.tokens.verify(videoId, token);
        if (checked !== "ok") {
          deps.logger.info("DRM licence refused", { video_id: videoId, reason: checked });
          return refuse(new ApiError("PERMISSION_DENIED", TOKEN_MESSAGES[checked], ["drm.token"]));
        }

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
      },
      {
        // The body is read here (BODY_LIMITS.drmLicence, counted while read), not by the API's JSON parser: players may send any content type.
        parse: "none",
        detail: {
          operationId: operationId("requestDrmLicense"),
          tags: ["DRM"],
          summary: "ClearKey licence",
          description:
            'The W3C ClearKey licence service (EME `org.w3.clearkey`) of a DRM video: use `video.drm_license_url` exactly as given (this path with `?token=`). No API key: the token, signed and expiring (`DRM_TOKEN_TTL_MS`, 24 h by default), is the credential; it is valid for its own video only. The answer holds the keys of this video among the requested key ids (unknown ones are omitted: `keys` may be empty). CORS is open (`Access-Control-Allow-Origin: *`, OPTIONS preflight answered). Errors use the API envelope: 403 PERMISSION_DENIED (`details: ["drm.token"]`) for a missing, invalid, expired or other video\'s token; 413 PAYLOAD_TOO_LARGE for a body over 16 KiB; 422 VALIDATION_ERROR for a body that is not a licence request; 429 RATE_LIMITED (600/min per token, 120/min per client address) with `Retry-After`.',
          security: [],
          parameters: [{ name: "token", in: "query", required: true, description: "The signed licence token of `drm_license_url`.", schema: { type: "string" } }],
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["kids"],
                  properties: {
                    kids: { type: "array", minItems: 1, maxItems: MAX_KIDS, items: { type: "string", pattern: KID.source }, description: "Key ids, 16 bytes each, base64url without padding." },
                    type: { type: "string", enum: ["temporary"] },
                  },
                },
                example: { kids: ["AAECAwQFBgcICQoLDA0ODw"], type: "temporary" },
              },
            },
          },
          responses: {
            200: {
              description: "A JWK set (not the API envelope: the format EME's ClearKey expects).",
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    required: ["keys", "type"],
                    properties: {
                      keys: {
                        type: "array",
                        items: {
                          type: "object",
                          required: ["kty", "kid", "k"],
                          properties: {
                            kty: { type: "string", const: "oct" },
                            kid: { type: "string", description: "Key id, base64url." },
                            k: { type: "string", description: "The 128-bit content key, base64url." },
                          },
                        },
                      },
                      type: { type: "string", const: "temporary" },
                    },
                  },
                },
              },
            },
            // Each status with its own codes (not the generic envelope): test/openapi-lint.test.ts.
            ...errorResponses(["PERMISSION_DENIED", "PAYLOAD_TOO_LARGE", "VALIDATION_ERROR", "RATE_LIMITED", "INTERNAL_ERROR"]),
          },
        } as never,
      },
    );
}
