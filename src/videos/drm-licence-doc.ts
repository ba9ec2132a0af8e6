import { t } from "elysia";
import { errorResponses, operationId } from "../http/openapi-docs.ts";

/** Key ids one request may name (a video has one). */
export const MAX_KIDS = 16;
/** A 16-byte key id in base64url without padding (W3C EME ClearKey). */
export const KID = /^[A-Za-z0-9_-]{22}$/;

/**
 * The licence's query, for the document (Elysia writes a route's `parameters` from its schemas, replacing any in
 * `detail`). The handler reads both itself: a refusal names the token that failed.
 */
export const LICENCE_QUERY = t.Object({
  token: t.Optional(t.String({ description: "The signed licence token of `drm_license_url` (required)." })),
  playback_token: t.Optional(
    t.String({
      description:
        "A video with `playback_policy: signed`: the playback JWT (RS256, `aud: v`, `sub` = the video's id) signed with one of the organization's signing keys: `drm_license_url` + `&playback_token=<JWT>`, the same token as the manifest's `?token=`.",
    }),
  ),
});

/** The OpenAPI details of `POST /drm/clearkey/{id}/license` (drm-licence-routes.ts): a fresh object for each app. */
export function licenceDoc() {
  return {
    operationId: operationId("requestDrmLicense"),
    tags: ["DRM"],
    summary: "ClearKey licence",
    description:
      'The W3C ClearKey licence service (EME `org.w3.clearkey`) of a DRM video: use `video.drm_license_url` exactly as given (this path with `?token=`). No API key: the token, signed and expiring (`DRM_TOKEN_TTL_MS`, 24 h by default), is the credential; it is valid for its own video only. A video with `playback_policy: signed` also needs its playback JWT as `&playback_token=` (the token the customer appends to the manifest, `aud: v`): 403 PERMISSION_DENIED naming `playback_token` otherwise. The answer holds the keys of this video among the requested key ids (unknown ones are omitted: `keys` may be empty). CORS is open (`Access-Control-Allow-Origin: *`, OPTIONS preflight answered). Errors use the API envelope: 403 PERMISSION_DENIED (`details: ["drm.token"]`) for a missing, invalid, expired or other video\'s token; 413 PAYLOAD_TOO_LARGE for a body over 16 KiB; 422 VALIDATION_ERROR for a body that is not a licence request; 429 RATE_LIMITED (600/min per token, 120/min per client address) with `Retry-After`.',
    security: [],
    requestBody: licenceRequestBody(),
    responses: {
      200: jwkSetResponse(),
      // Each status with its own codes (not the generic envelope): test/openapi-lint.test.ts.
      ...errorResponses(["PERMISSION_DENIED", "PAYLOAD_TOO_LARGE", "VALIDATION_ERROR", "RATE_LIMITED", "INTERNAL_ERROR"]),
    },
  } as never;
}

/** The licence request: `{"kids": [...], "type": "temporary"}`. */
function licenceRequestBody() {
  return {
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
  };
}

/** 200: a JWK set, as EME's ClearKey expects. */
function jwkSetResponse() {
  return {
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
  };
}
