import { loadConfig } from "../config.ts";
import { createDatabase } from "../db/create-database.ts";
import { DomainError } from "../errors.ts";
import { createOrgStore, type KeyInfo } from "../orgs/org-store.ts";
import { applyOrgSet, CliUsageError } from "./org-set.ts";
import { parseArgs } from "./parse-args.ts";

const USAGE = `Operator CLI (talks to the same database as the server; safe while it runs)

  org create --name NAME [--json]        create an organization with default settings and a key
  org list [--json]
  org show --org ID                      settings and the live key's prefix, as JSON
  org set --org ID [--transcoding on|off] [--ladder 360p,720p,1080p]
                   [--downloads top,720p|none] [--download-format mkv|mp4-encrypted]
                   [--drm on|off] [--permissions all|none|a,b,...] [--limit NAME=N ...]
                   limits: requests, livestreams, videos, upload-url (per minute)
  key create --org ID [--name NAME] [--expires-at ISO] [--json]
                                         fails with API_KEY_EXISTS while one is live (an expired key is not)
  key show --org ID [--json]             the organization's keys: prefix, name, status, dates (never the secret)
  key revoke --org ID

Environment: DATA_DIR, DATABASE_URL (as for the server).`;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A key as printed: the prefix and dates, never the secret. */
function keyView(k: KeyInfo) {
  return { prefix: k.prefix, name: k.name, status: k.status, created_at: iso(k.createdAt), expires_at: iso(k.expiresAt), revoked_at: iso(k.revokedAt) };
}

function parseExpiresAt(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const t = Date.parse(raw);
  if (raw === "true" || Number.isNaN(t)) throw new CliUsageError("--expires-at must be an ISO 8601 time, e.g. 2030-01-01T00:00:00Z");
  if (t <= Date.now()) throw new CliUsageError("--expires-at must be in the future");
  return t;
}

function one(options: Record<string, string[]>, name: string): string {
  const v = options[name]?.at(-1);
  if (!v || v === "true") throw new CliUsageError(`--${name} is required`);
  return v;
}

async function run(argv: string[]): Promise<number> {
  const { positionals, options } = parseArgs(argv);
  const [noun, verb] = positionals;
  const json = options.json !== undefined;
  if (!noun || options.help) {
    console.log(USAGE);
    return noun ? 0 : 2;
  }
  const config = loadConfig();
  const database = await createDatabase({ url: config.databaseUrl, authToken: config.databaseAuthToken });
  const orgs = createOrgStore(database);
  try {
    switch (`${noun} ${verb}`) {
      case "org create": {
        const { org, apiKey } = await orgs.createOrg(one(options, "name"));
        console.log(json ? JSON.stringify({ org_id: org.id, api_key: apiKey }) : `org_id: ${org.id}\napi_key: ${apiKey}  (shown once)`);
        return 0;
      }
      case "org list": {
        const list = await orgs.listOrgs();
        console.log(json ? JSON.stringify(list.map((o) => ({ org_id: o.id, name: o.name }))) : list.map((o) => `${o.id}\t${o.name}`).join("\n"));
        return 0;
      }
      case "org show": {
        const org = await orgs.mustGetOrg(one(options, "org"));
        const live = (await orgs.listKeys(org.id)).find((k) => k.status === "live");
        const apiKey = live ? { prefix: live.prefix, name: live.name, created_at: iso(live.createdAt), expires_at: iso(live.expiresAt) } : null;
        console.log(JSON.stringify({ org_id: org.id, name: org.name, created_at: iso(org.createdAt), api_key: apiKey, settings: org.settings }, null, 2));
        return 0;
      }
      case "org set": {
        const orgId = one(options, "org");
        const org = await orgs.updateSettings(orgId, (s) => applyOrgSet(s, options));
        console.log(JSON.stringify({ org_id: org.id, settings: org.settings }, null, 2));
        return 0;
      }
      case "key create": {
        const orgId = one(options, "org");
        const { apiKey } = await orgs.createKey(orgId, options.name?.at(-1) ?? "cli", { expiresAt: parseExpiresAt(options["expires-at"]?.at(-1)) });
        console.log(json ? JSON.stringify({ org_id: orgId, api_key: apiKey }) : `api_key: ${apiKey}  (shown once)`);
        return 0;
      }
      case "key show": {
        const orgId = one(options, "org");
        const keys = (await orgs.listKeys(orgId)).map(keyView);
        if (json) console.log(JSON.stringify({ org_id: orgId, keys }));
        else if (keys.length === 0) console.log("no keys");
        else
          console.log(
            keys
              .map((k) => `sk_live_${k.prefix}_…\t${k.status}\t${k.name}\tcreated ${k.created_at}${k.expires_at ? `\texpires ${k.expires_at}` : ""}${k.revoked_at ? `\trevoked ${k.revoked_at}` : ""}`)
              .join("\n"),
          );
        return 0;
      }
      case "key revoke": {
        const n = await orgs.revokeKey(one(options, "org"));
        console.log(n > 0 ? "revoked" : "no live key");
        return 0;
      }
      default:
        console.error(`Unknown command "${positionals.join(" ")}".\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    if (err instanceof DomainError || err instanceof CliUsageError) {
      console.error(`${err.code}: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    database.close();
  }
}

process.exit(await run(process.argv.slice(2)));
