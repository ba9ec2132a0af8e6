import { InvalidInput } from "../../errors.ts";
import type { KeyInfo } from "../../orgs/org-store.ts";
import { one, opt, type Command } from "../command.ts";
import { json, org } from "./flags.ts";
import { iso } from "./format.ts";

/** A key as printed: the prefix and dates, never the secret. */
function keyView(k: KeyInfo) {
  return { prefix: k.prefix, name: k.name, status: k.status, created_at: iso(k.createdAt), expires_at: iso(k.expiresAt), revoked_at: iso(k.revokedAt) };
}

const isoTime = (raw: string) => (Number.isNaN(Date.parse(raw)) ? `must be an ISO 8601 time, e.g. 2030-01-01T00:00:00Z, got "${raw}"` : undefined);

/** API keys: one live key per organization; rotation is revoke, then create. */
export const keyCommands: Command[] = [
  {
    name: "key create",
    summary: "a new API key (fails with API_KEY_EXISTS while one is live; an expired key is not)",
    flags: [org, { name: "name", value: "NAME", help: 'a label (default "cli")' }, { name: "expires-at", value: "ISO", check: isoTime, help: "when it stops working" }, json],
    async run(ctx) {
      const orgId = one(ctx, "org");
      const raw = opt(ctx, "expires-at");
      const expiresAt = raw === undefined ? undefined : Date.parse(raw);
      // Well-formed but refused (exit 1, like the API's VALIDATION_ERROR), not a malformed command line.
      if (expiresAt !== undefined && expiresAt <= Date.now()) throw new InvalidInput({ "--expires-at": "must be in the future" }, "--expires-at must be in the future");
      const { orgs } = await ctx.database();
      const { apiKey } = await orgs.createKey(orgId, opt(ctx, "name") ?? "cli", { expiresAt });
      console.log(ctx.json ? JSON.stringify({ org_id: orgId, api_key: apiKey }) : `api_key: ${apiKey}  (shown once)`);
      return 0;
    },
  },
  {
    name: "key show",
    summary: "the organization's keys: prefix, name, status, dates (never the secret)",
    flags: [org, json],
    async run(ctx) {
      const orgId = one(ctx, "org");
      const { orgs } = await ctx.database();
      const keys = (await orgs.listKeys(orgId)).map(keyView);
      if (ctx.json) console.log(JSON.stringify({ org_id: orgId, keys }));
      else if (keys.length === 0) console.log("no keys");
      else
        console.log(
          keys
            .map((k) => `sk_live_${k.prefix}_…\t${k.status}\t${k.name}\tcreated ${k.created_at}${k.expires_at ? `\texpires ${k.expires_at}` : ""}${k.revoked_at ? `\trevoked ${k.revoked_at}` : ""}`)
            .join("\n"),
        );
      return 0;
    },
  },
  {
    name: "key revoke",
    summary: "revoke the live key",
    flags: [org],
    async run(ctx) {
      const { orgs } = await ctx.database();
      const n = await orgs.revokeKey(one(ctx, "org"));
      console.log(n > 0 ? "revoked" : "no live key");
      return 0;
    },
  },
];
