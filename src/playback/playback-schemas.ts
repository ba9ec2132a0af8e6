import { type Static, t } from "elysia";
import { type Equals, isoTime, named, pageOf, strictObject } from "../http/openapi-docs.ts";
import type { restrictionView } from "./restrictions.ts";
import type { signingKeyView } from "./signing-keys.ts";

/** Response schemas of src/playback, each pinned to the code that builds the body. */

export const SigningKeySchema = strictObject({ id: t.String({ description: "The key's id: a token's `kid` header." }), created_at: isoTime() });
const _key: Equals<Static<typeof SigningKeySchema>, ReturnType<typeof signingKeyView>> = true;

export const SigningKeyCreatedSchema = strictObject({
  id: t.String({ description: "The key's id: a token's `kid` header." }),
  private_key: t.String({ description: "The RSA 2048 private key, PKCS#8 PEM, base64-encoded (as Mux hands it out). Shown this once: the service keeps only the public key." }),
});

export const SigningKeyListSchema = pageOf(SigningKeySchema);

export const ReferrerRuleSchema = strictObject({
  allowed_domains: t.Array(t.String(), { maxItems: 10, description: "`example.com`, `*.example.com` (any subdomain, not the apex) or `*`." }),
  allow_no_referrer: t.Boolean({ description: "Whether a request without a Referer header plays." }),
});

export const PlaybackRestrictionSchema = strictObject({ id: t.String(), referrer: ReferrerRuleSchema, created_at: isoTime() });
const _restriction: Equals<Static<typeof PlaybackRestrictionSchema>, ReturnType<typeof restrictionView>> = true;

export const PlaybackRestrictionListSchema = pageOf(PlaybackRestrictionSchema);

named("SigningKey", SigningKeySchema);
named("PlaybackRestriction", PlaybackRestrictionSchema);
