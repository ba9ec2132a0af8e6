/** A restriction's referrer rule, as stored and answered (Mux's shape). */
export interface ReferrerRule {
  allowed_domains: string[];
  allow_no_referrer: boolean;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A domain as `allowed_domains` takes it: `example.com`, `*.example.com` (any subdomain, not the apex), or `*` (any). Null when malformed. */
export function normalizeDomain(raw: string): string | null {
  const d = raw.trim().toLowerCase().replace(/\.$/, "");
  if (d === "*") return d;
  const host = d.startsWith("*.") ? d.slice(2) : d;
  if (host.length > 253 || (!host.includes(".") && host !== "localhost")) return null;
  return host.split(".").every((l) => LABEL.test(l)) ? d : null;
}

/** Does one allowed domain cover `host`? `*.example.com` covers `a.example.com` and `a.b.example.com`, not `example.com`. */
function covers(domain: string, host: string): boolean {
  if (domain === "*") return true;
  if (domain.startsWith("*.")) return host.endsWith(domain.slice(1));
  return host === domain;
}

/**
 * The verdict on a request's `Referer` (a browser sends at least the page's
 * origin on a cross-origin request under the default policy): null when
 * allowed, else the reason.
 */
export function refuseReferrer(rule: ReferrerRule, referer: string | null): string | null {
  if (!referer) return rule.allow_no_referrer ? null : "a Referer header is required by this video's playback restriction";
  let host: string;
  try {
    host = new URL(referer).hostname.toLowerCase();
  } catch {
    return "the Referer header is not a URL";
  }
  return rule.allowed_domains.some((d) => covers(d, host)) ? null : `the referring site ${host} is not among the restriction's allowed_domains`;
}
