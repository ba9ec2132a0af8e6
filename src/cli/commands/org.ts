import { changeOrgSettings, type SettingsChange, SettingsChangeRefused } from "../../orgs/settings-change.ts";
import { CliUsageError, oneOf, one, type Command } from "../command.ts";
import { json, org } from "./flags.ts";
import { iso } from "./format.ts";
import { invitationMailer, mailFailure } from "../../people/invitation-mail.ts";
import { checkEmail, INVITABLE_ROLES, normalizeEmail, setupUrl } from "../../people/people-rules.ts";
import { createPeopleStore } from "../../people/people-store.ts";

/** `org set` flags as the change they ask for (src/orgs/settings-change.ts validates and applies it). */
function settingsChangeOf(options: Record<string, string[]>): SettingsChange {
  const last = (k: string) => options[k]?.at(-1);
  return {
    transcoding: last("transcoding"),
    ladder: last("ladder"),
    downloads: last("downloads"),
    downloadFormat: last("download-format"),
    drm: last("drm"),
    playbackPolicy: last("playback-policy"),
    staticRenditions: last("static-renditions"),
    permissions: last("permissions"),
    limits: options.limit,
  };
}

/** The mail server refused or is unreachable: exit 1, naming its answer (never SMTP_URL's credentials). */
function refuseMail(err: unknown): never {
  throw new Error(`the invitation could not be mailed (${mailFailure(err)}); nothing was created`);
}

/** Organizations: create, list, show, set (settings). New `org …` commands go in this array. */
export const orgCommands: Command[] = [
  {
    name: "org create",
    summary: "create an organization with default settings and a key (and its owner, with --owner-email)",
    flags: [
      { name: "name", value: "NAME", required: true, help: "its display name" },
      {
        name: "owner-email",
        value: "EMAIL",
        help: "the owner who signs in to /settings: with SMTP_URL their invitation is mailed to them; without, prints owner_setup_url, a one-time link (72 h) that sets the password of an account of this organization only",
      },
      json,
    ],
    async run(ctx) {
      const { orgs, database, config } = await ctx.database();
      const ownerEmail = ctx.options["owner-email"]?.at(-1);
      const mailer = invitationMailer(config, () => config.baseUrl);
      // Checked before anything is created: a typo or an unreachable mail server must not leave an organization without an owner.
      if (ownerEmail !== undefined) checkEmail(ownerEmail);
      if (ownerEmail !== undefined && mailer) await mailer.verify().catch((err) => refuseMail(err));
      const people = createPeopleStore(database);
      const { org, apiKey } = await orgs.createOrg(one(ctx, "name"));
      const owner = ownerEmail === undefined ? undefined : await people.createOwner(org.id, ownerEmail, { delivered: mailer !== null });
      if (owner && mailer) {
        const to = normalizeEmail(ownerEmail ?? "");
        const sent = await mailer.send({ to, token: owner.token, orgName: org.name, role: "owner" }).then(
          () => true,
          () => false,
        );
        if (ctx.json) console.log(JSON.stringify({ org_id: org.id, api_key: apiKey, owner_invitation: sent ? "mailed" : "not_sent" }));
        else
          console.log(
            `org_id: ${org.id}\napi_key: ${apiKey}  (shown once)\nowner_invitation: ${sent ? `mailed to ${to} (one-time link, expires in 72 h)` : `not sent to ${to}; send it again with \`org invite --org ${org.id} --email ${to} --role owner\``}`,
          );
        return sent ? 0 : 1;
      }
      const ownerSetupUrl = owner ? setupUrl(config.baseUrl, owner.token) : undefined;
      if (ctx.json) console.log(JSON.stringify({ org_id: org.id, api_key: apiKey, ...(ownerSetupUrl ? { owner_setup_url: ownerSetupUrl } : {}) }));
      else console.log(`org_id: ${org.id}\napi_key: ${apiKey}  (shown once)${ownerSetupUrl ? `\nowner_setup_url: ${ownerSetupUrl}  (one-time, expires in 72 h)` : ""}`);
      return 0;
    },
  },
  {
    name: "org invite",
    summary: "invite a member to the settings screen: mailed to them with SMTP_URL, else prints their one-time setup link",
    flags: [
      org,
      { name: "email", value: "EMAIL", required: true, help: "who is invited" },
      {
        name: "role",
        value: `${INVITABLE_ROLES.join("|")}|owner`,
        required: true,
        check: oneOf(...INVITABLE_ROLES, "owner"),
        help: "what they may do on the screen (API keys and members stay owner only); owner: only while the organization has no owner who set a password (a fresh owner link)",
      },
      json,
    ],
    async run(ctx) {
      const { orgs, database, config } = await ctx.database();
      const found = await orgs.mustGetOrg(one(ctx, "org"));
      const mailer = invitationMailer(config, () => config.baseUrl);
      const people = createPeopleStore(database);
      const role = one(ctx, "role");
      const { token, userId } =
        role === "owner"
          ? await people.createOwner(found.id, one(ctx, "email"), { delivered: mailer !== null })
          : await people.invite(found.id, one(ctx, "email"), role, { delivered: mailer !== null });
      if (mailer) {
        const to = normalizeEmail(one(ctx, "email"));
        try {
          await mailer.send({ to, token, orgName: found.name, role });
        } catch (err) {
          await people.withdrawInvitation(found.id, userId);
          return refuseMail(err);
        }
        console.log(ctx.json ? JSON.stringify({ org_id: found.id, setup_url: null, invitation: "mailed" }) : `invitation: mailed to ${to} (one-time link, expires in 72 h)`);
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
      { name: "static-renditions", value: "highest,audio-only,720p|none", help: "the static_renditions (MP4/M4A files) of videos registered without them, and of live recordings" },
      { name: "permissions", value: "all|none|a,b,…", help: "what the organization's API key may do" },
      { name: "limit", value: "NAME=N", repeat: true, help: "per-minute limit: requests, livestreams, videos, upload-url" },
    ],
    async run(ctx) {
      const { orgs } = await ctx.database();
      // A refused change is the command line's error (exit 2, naming the flag), as before the rules moved to src/orgs.
      const updated = await changeOrgSettings(orgs, one(ctx, "org"), settingsChangeOf(ctx.options)).catch((err) => {
        throw err instanceof SettingsChangeRefused ? new CliUsageError(err.message) : err;
      });
      console.log(JSON.stringify({ org_id: updated.id, settings: updated.settings }, null, 2));
      return 0;
    },
  },
];
