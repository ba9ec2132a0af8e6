import { oneOf, one, type Command } from "../command.ts";
import { applyOrgSet } from "../org-set.ts";
import { iso } from "./format.ts";

const json = { name: "json", help: "print JSON" };
const org = { name: "org", value: "ID", required: true, help: "the organization (org_…)" };

/** Organizations: create, list, show, set (settings). New `org …` commands go in this array. */
export const orgCommands: Command[] = [
  {
    name: "org create",
    summary: "create an organization with default settings and a key",
    flags: [{ name: "name", value: "NAME", required: true, help: "its display name" }, json],
    async run(ctx) {
      const { orgs } = await ctx.database();
      const { org, apiKey } = await orgs.createOrg(one(ctx, "name"));
      console.log(ctx.json ? JSON.stringify({ org_id: org.id, api_key: apiKey }) : `org_id: ${org.id}\napi_key: ${apiKey}  (shown once)`);
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
