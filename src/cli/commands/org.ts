import { oneOf, one, type Command } from "../command.ts";
import { applyOrgSet } from "../org-set.ts";
import { json, org } from "./flags.ts";
import { iso } from "./format.ts";
import { createPeopleStore, INVITABLE_ROLES, normalizeEmail, setupUrl } from "../../settings/people-store.ts";

/** Organizations: create, list, show, set (settings). New `org …` commands go in this array. */
export const orgCommands: Command[] = [
  {
    name: "org create",
    summary: "create an organization with default settings and a key (and its owner, with --owner-email)",
    flags: [
      { name: "name", value: "NAME", required: true, help: "its display name" },
      { name: "owner-email", value: "EMAIL", help: "the owner who signs in to /settings: prints owner_setup_url, a one-time link (72 h); none for a person who already has a password" },
      json,
    ],
    async run(ctx) {
      const { orgs, database, config } = await ctx.database();
      const ownerEmail = ctx.options["owner-email"]?.at(-1);
      // Checked before anything is created: a typo must not leave an organization without an owner.
      const people = createPeopleStore(database);
      if (ownerEmail !== undefined) await people.checkNewOwner(ownerEmail);
      const { org, apiKey } = await orgs.createOrg(one(ctx, "name"));
      const owner = ownerEmail === undefined ? undefined : await people.createOwner(org.id, ownerEmail);
      // A person who already has a password gets no link (it could set that password): they sign in and switch organization.
      const ownerSetupUrl = owner?.token ? setupUrl(config.baseUrl, owner.token) : undefined;
      const existing = owner?.existingAccount === true;
      if (ctx.json)
        console.log(JSON.stringify({ org_id: org.id, api_key: apiKey, ...(ownerSetupUrl ? { owner_setup_url: ownerSetupUrl } : {}), ...(existing ? { owner_existing_account: true } : {}) }));
      else
        console.log(
          `org_id: ${org.id}\napi_key: ${apiKey}  (shown once)${ownerSetupUrl ? `\nowner_setup_url: ${ownerSetupUrl}  (one-time, expires in 72 h)` : ""}${existing ? `\nowner: ${normalizeEmail(ownerEmail ?? "")} already has an account; they sign in with their existing password (no setup link)` : ""}`,
        );
      return 0;
    },
  },
  {
    name: "org invite",
    summary: "invite a member to the settings screen; prints their one-time setup link (none for a person who already has a password)",
    flags: [
      org,
      { name: "email", value: "EMAIL", required: true, help: "who is invited" },
      { name: "role", value: INVITABLE_ROLES.join("|"), required: true, check: oneOf(...INVITABLE_ROLES), help: "what they may do on the screen (API keys and members stay owner only)" },
      json,
    ],
    async run(ctx) {
      const { orgs, database, config } = await ctx.database();
      const found = await orgs.mustGetOrg(one(ctx, "org"));
      const { token } = await createPeopleStore(database).invite(found.id, one(ctx, "email"), one(ctx, "role"));
      if (!token) {
        // Already has a password: added at once, no link (a link could set that password).
        const email = normalizeEmail(one(ctx, "email"));
        console.log(
          ctx.json
            ? JSON.stringify({ org_id: found.id, setup_url: null, existing_account: true })
            : `added: ${email} already has an account; they sign in with their existing password (no setup link)`,
        );
        return 0;
      }
      const url = setupUrl(config.baseUrl, token);
      console.log(ctx.json ? JSON.stringify({ org_id: found.id, setup_url: url }) : `setup_url: ${url}  (one-time, expires in 72 h)`);
      return 0;
    },
  },
  {
    name: "org list",
    summary: "every organization: id and name",
    flags: [json],
    async run(ctx) {
      const { orgs } = await ctx.database();
      const list = await orgs.listOrgs();
      console.log(ctx.json ? JSON.stringify(list.map((o) => ({ org_id: o.id, name: o.name }))) : list.map((o) => `${o.id}\t${o.name}`).join("\n"));
      return 0;
    },
  },
  {
    name: "org show",
    summary: "settings and the live key's prefix, as JSON",
    flags: [org],
    async run(ctx) {
      const { orgs } = await ctx.database();
      const found = await orgs.mustGetOrg(one(ctx, "org"));
      const live = (await orgs.listKeys(found.id)).find((k) => k.status === "live");
      const apiKey = live ? { prefix: live.prefix, name: live.name, created_at: iso(live.createdAt), expires_at: iso(live.expiresAt) } : null;
      console.log(JSON.stringify({ org_id: found.id, name: found.name, created_at: iso(found.createdAt), api_key: apiKey, settings: found.settings }, null, 2));
      return 0;
    },
  },
  {
    name: "org set",
    summary: "change an organization's settings (prints them as JSON)",
    flags: [
      org,
      { name: "transcoding", value: "on|off", check: oneOf("on", "off"), help: "transcode uploads (off: source only)" },
      { name: "ladder", value: "360p,720p,…", help: "the rungs to encode (standard rungs 144p … 2160p)" },
      { name: "downloads", value: "top,720p|none", help: "the renditions offered as downloads" },
      { name: "download-format", value: "mkv|mp4-encrypted", check: oneOf("mkv", "mp4-encrypted"), help: "the downloads' container" },
      { name: "drm", value: "on|off", check: oneOf("on", "off"), help: "the DRM feature (drm_enabled accepted)" },
      { name: "playback-policy", value: "public|signed", check: oneOf("public", "signed"), help: "the playback_policy of videos and streams created without one" },
      { name: "permissions", value: "all|none|a,b,…", help: "what the organization's API key may do" },
      { name: "limit", value: "NAME=N", repeat: true, help: "per-minute limit: requests, livestreams, videos, upload-url" },
    ],
    async run(ctx) {
      const { orgs } = await ctx.database();
      const updated = await orgs.updateSettings(one(ctx, "org"), (s) => applyOrgSet(s, ctx.options));
      console.log(JSON.stringify({ org_id: updated.id, settings: updated.settings }, null, 2));
      return 0;
    },
  },
];
