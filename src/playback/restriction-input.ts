import { InvalidInput } from "../errors.ts";
import { MAX_ALLOWED_DOMAINS } from "./errors.ts";
import { normalizeDomain, type ReferrerRule } from "./referrer-rule.ts";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** `{referrer: {allowed_domains, allow_no_referrer}}`, every failing field named (`referrer.allowed_domains[2]` …). */
export function parseRestrictionInput(body: unknown): { referrer: ReferrerRule } {
  const details: Record<string, string> = Object.create(null);
  const referrer = isObject(body) ? body.referrer : undefined;
  if (!isObject(referrer)) throw new InvalidInput({ referrer: "must be an object {allowed_domains, allow_no_referrer}" });
  for (const k of Object.keys(referrer)) if (k !== "allowed_domains" && k !== "allow_no_referrer") details[`referrer.${k}`] = "is not a known field";
  const domains: string[] = [];
  const raw = referrer.allowed_domains;
  if (!Array.isArray(raw) || raw.length > MAX_ALLOWED_DOMAINS) details["referrer.allowed_domains"] = `must be a list of at most ${MAX_ALLOWED_DOMAINS} domains`;
  else
    raw.forEach((d, i) => {
      const n = typeof d === "string" && d.length <= 253 ? normalizeDomain(d) : null;
      if (n === null) details[`referrer.allowed_domains[${i}]`] = "must be a domain (example.com), a wildcard (*.example.com) or *";
      else if (!domains.includes(n)) domains.push(n);
    });
  const allowNone = referrer.allow_no_referrer ?? false;
  if (typeof allowNone !== "boolean") details["referrer.allow_no_referrer"] = "must be a boolean";
  if (Object.keys(details).length > 0) throw new InvalidInput({ ...details });
  return { referrer: { allowed_domains: domains, allow_no_referrer: allowNone as boolean } };
}
