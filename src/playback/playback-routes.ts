import { Elysia, t } from "elysia";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { emptyBody, strictBody } from "../http/input.ts";
import { DeletedSchema, doc } from "../http/openapi-docs.ts";
import { success } from "../http/envelope.ts";
import { MAX_ALLOWED_DOMAINS, MAX_SIGNING_KEYS, NotFound } from "./errors.ts";
import { parseRestrictionInput } from "./restriction-input.ts";
import { restrictionView, type Restrictions } from "./restrictions.ts";
import { signingKeyView, type SigningKeys } from "./signing-keys.ts";
import { PlaybackRestrictionListSchema, PlaybackRestrictionSchema, ReferrerRuleSchema, SigningKeyCreatedSchema, SigningKeyListSchema } from "./playback-schemas.ts";

const keyTags = ["Signed playback"];
const restrictionTags = ["Playback restrictions"];
const idParams = t.Object({ id: t.String({ maxLength: 64 }) });
const restrictionBody = t.Object({ referrer: ReferrerRuleSchema }, { additionalProperties: false });

const TOKEN_RULES =
  "A token is a JWT the customer signs with RS256 (Mux's format): header `kid` = the key's id; claims `sub` = the video or stream id, `aud` = `v` (playlists, segments, downloads, DRM licence), `t` (thumbnails), `g` (animated images) or `s` (storyboards), `exp` (required); optional `playback_restriction_id`; other claims are ignored. Append it as `?token=` to the bare media URL; a master playlist requested with it names its child playlists and segments with the same token.";

/** Signing keys and playback restrictions (issue 27): the API an organization manages its playback rules with. */
export function playbackRoutes(deps: { keys: SigningKeys; restrictions: Restrictions }) {
  return new Elysia({ name: "playback-routes", prefix: API_PREFIX })
    .use(apiContext())
    .post(
      "/signing-keys/",
      async ({ auth, body, set }) => {
        emptyBody.parse(body);
        const { row, privateKey } = await deps.keys.create(auth.org.id);
        set.status = 201;
        return success({ id: row.id, private_key: privateKey }, "Signing key created. Store private_key now: it is not shown again.");
      },
      {
        permission: "signing_keys.manage",
        detail: doc({
          operationId: "createSigningKey",
          data: SigningKeyCreatedSchema,
          ok: 201,
          errors: ["VALIDATION_ERROR"],
          tags: keyTags,
          summary: "Create a signing key",
          description: `A new RSA 2048 key pair: \`data.private_key\` (PKCS#8 PEM, base64) is shown this once; the service keeps only the public key. 422 VALIDATION_ERROR (\`details.signing_keys\`) once the organization has ${MAX_SIGNING_KEYS}. ${TOKEN_RULES}`,
        }),
      },
    )
    .get("/signing-keys/", async ({ auth }) => success({ items: (await deps.keys.list(auth.org.id)).map(signingKeyView), next_cursor: null }), {
      permission: "signing_keys.manage",
      detail: doc({
        operationId: "listSigningKeys",
        data: SigningKeyListSchema,
        tags: keyTags,
        summary: "List signing keys",
        description: `Newest first, at most ${MAX_SIGNING_KEYS} (one page: \`next_cursor\` is null). Ids and creation times only: private keys are never kept.`,
      }),
    })
    .delete(
      "/signing-keys/:id/",
      async ({ auth, params }) => {
        await deps.keys.remove(auth.org.id, params.id);
        return success({ id: params.id, deleted: true as const }, "Signing key deleted: tokens signed with it no longer play.");
      },
      {
        permission: "signing_keys.manage",
        params: idParams,
        detail: doc({
          operationId: "deleteSigningKey",
          data: DeletedSchema,
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
          tags: keyTags,
          summary: "Delete a signing key",
          description: "Tokens signed with it are refused from the next media request on. 404 NOT_FOUND for an unknown id or another organization's.",
        }),
      },
    )
    .post(
      "/playback-restrictions/",
      async ({ auth, body, set }) => {
        const input = strictBody(body, ["referrer"], parseRestrictionInput);
        const row = await deps.restrictions.create(auth.org.id, input.referrer);
        set.status = 201;
        return success(restrictionView(row), "Playback restriction created.");
      },
      {
        permission: "playback_restrictions.manage",
        detail: doc({
          operationId: "createPlaybackRestriction",
          body: restrictionBody,
          data: PlaybackRestrictionSchema,
          ok: 201,
          errors: ["VALIDATION_ERROR"],
          tags: restrictionTags,
          summary: "Create a playback restriction",
          description: `Referrer rules (at most ${MAX_ALLOWED_DOMAINS} domains): \`example.com\` matches that host, \`*.example.com\` any of its subdomains (not the apex), \`*\` any. Attach it to a video or stream with \`playback_restriction_id\` at creation, or to a signed token with its \`playback_restriction_id\` claim. Playlists, segments, images and downloads of such an asset are then served only to a request whose \`Referer\` host is allowed (or that has none, with \`allow_no_referrer\`); otherwise 403 PERMISSION_DENIED with \`details.referrer\`.`,
        }),
      },
    )
    .get("/playback-restrictions/", async ({ auth }) => success({ items: (await deps.restrictions.list(auth.org.id)).map(restrictionView), next_cursor: null }), {
      permission: "playback_restrictions.manage",
      detail: doc({
        operationId: "listPlaybackRestrictions",
        data: PlaybackRestrictionListSchema,
        tags: restrictionTags,
        summary: "List playback restrictions",
        description: "Newest first, all of them (one page: `next_cursor` is null).",
      }),
    })
    .get(
      "/playback-restrictions/:id/",
      async ({ auth, params }) => {
        const row = await deps.restrictions.get(auth.org.id, params.id);
        if (!row) throw new NotFound();
        return success(restrictionView(row));
      },
      {
        permission: "playback_restrictions.manage",
        params: idParams,
        detail: doc({
          operationId: "getPlaybackRestriction",
          data: PlaybackRestrictionSchema,
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
          tags: restrictionTags,
          summary: "Get a playback restriction",
          description: "404 NOT_FOUND for an unknown id or another organization's.",
        }),
      },
    )
    .delete(
      "/playback-restrictions/:id/",
      async ({ auth, params }) => {
        await deps.restrictions.remove(auth.org.id, params.id);
        return success({ id: params.id, deleted: true as const }, "Playback restriction deleted.");
      },
      {
        permission: "playback_restrictions.manage",
        params: idParams,
        detail: doc({
          operationId: "deletePlaybackRestriction",
          data: DeletedSchema,
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
          tags: restrictionTags,
          summary: "Delete a playback restriction",
          description:
            "An asset created with it then refuses every media request (403, `details.playback_restriction_id`): a rule that kept viewers out never fails open. 404 NOT_FOUND for an unknown id or another organization's.",
        }),
      },
    );
}
