import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

/**
 * Server-side request forgery guard for every outbound request made on a
 * caller's behalf (webhook deliveries, `source_url` fetches): the URL's host is
 * resolved and refused when any address is private, loopback, link-local or
 * otherwise not publicly routable, unless private networks are allowed
 * (ALLOW_PRIVATE_NETWORK=1, development and tests).
 *
 * Known gap: the address is checked, then fetch resolves the name again, so a
 * DNS answer that changes within the cache TTL (rebinding) is not caught.
 */
export class OutboundRefusedError extends Error {
  override name = "OutboundRefusedError";
}

export type Lookup = (host: string) => Promise<string[]>;

const systemLookup: Lookup = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

function v4ToInt(ip: string): number {
  return ip.split(".").reduce((n, part) => n * 256 + Number(part), 0);
}

/** [network, prefix length] of the IPv4 blocks that are not publicly routable. */
const V4_BLOCKS: Array<[string, number]> = [
  ["0.0.0.0", 8], // "this" network
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata lives here)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];
const V4_RANGES = V4_BLOCKS.map(([net, bits]) => {
  const size = 2 ** (32 - bits);
  const start = v4ToInt(net);
  return [start, start + size - 1] as const;
});

function isPrivateV4(ip: string): boolean {
  const n = v4ToInt(ip);
  return V4_RANGES.some(([lo, hi]) => n >= lo && n <= hi);
}

/** The eight 16-bit groups of an IPv6 address (an IPv4 tail becomes two groups). */
function v6Groups(ip: string): number[] {
  let text = ip.toLowerCase();
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const n = v4ToInt(tail[1]!);
    text = text.slice(0, -tail[1]!.length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = rest ? rest.split(":") : [];
  const fill = rest === undefined ? [] : Array(8 - left.length - right.length).fill("0");
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16));
}

function isPrivateV6(ip: string): boolean {
  const g = v6Groups(ip);
  const embeddedV4 = () => `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
  if (g.slice(0, 7).every((x) => x === 0)) return g[7] === 0 || g[7] === 1; // :: and ::1
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return isPrivateV4(embeddedV4()); // ::ffff:a.b.c.d
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return isPrivateV4(embeddedV4()); // NAT64
  if (g[0] === 0x2002) return isPrivateV4(`${g[1]! >> 8}.${g[1]! & 255}.${g[2]! >> 8}.${g[2]! & 255}`); // 6to4
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((first & 0xffc0) === 0xfec0) return true; // fec0::/10 old site-local
  if ((first & 0xff00) === 0xff00) return true; // multicast
  if (first === 0x2001 && g[1] === 0x0db8) return true; // documentation
  if (first === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return true; // discard-only
  return false;
}

/** True for addresses a public service must never call on a caller's behalf. */
export function isPrivateAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const family = isIP(ip);
  if (family === 4) return isPrivateV4(ip);
  if (family === 6) return isPrivateV6(ip);
  return true; // not an address at all: refuse rather than guess
}

export interface OutboundGuard {
  /** Resolves the URL's host; throws OutboundRefusedError for a private address or a non-http(s) URL. */
  check(url: string | URL): Promise<void>;
  /**
   * fetch with the check applied to the URL and to every redirect hop
   * (`maxRedirects`, default 0: a 3xx is returned as is).
   */
  fetch(url: string | URL, init?: RequestInit & { maxRedirects?: number }): Promise<Response>;
}

/** `ttlMs` caches resolutions per host so a busy dispatcher does not resolve per request. */
export function createOutboundGuard(opts: { allowPrivate: boolean; lookup?: Lookup; ttlMs?: number }): OutboundGuard {
  const resolve = opts.lookup ?? systemLookup;
  const ttl = opts.ttlMs ?? 30_000;
  const cache = new Map<string, { verdict: string | null; until: number }>();

  async function refusalFor(host: string): Promise<string | null> {
    const hit = cache.get(host);
    if (hit && hit.until > Date.now()) return hit.verdict;
    const addresses = isIP(host) ? [host] : await resolve(host);
    const bad = addresses.find(isPrivateAddress);
    const verdict = addresses.length === 0 ? `${host} has no address` : bad ? `${host} resolves to a non-public address (${bad})` : null;
    if (cache.size > 10_000) cache.clear();
    cache.set(host, { verdict, until: Date.now() + ttl });
    return verdict;
  }

  async function check(url: string | URL): Promise<void> {
    const u = typeof url === "string" ? new URL(url) : url;
    if (u.protocol !== "https:" && u.protocol !== "http:") throw new OutboundRefusedError(`Refusing ${u.protocol} URL`);
    if (opts.allowPrivate) return;
    const host = u.hostname.replace(/^\[|\]$/g, "");
    const verdict = await refusalFor(host);
    if (verdict) throw new OutboundRefusedError(`Refusing ${verdict}`);
  }

  return {
    check,
    async fetch(url, init = {}) {
      const { maxRedirects = 0, ...rest } = init;
      let current = new URL(String(url));
      let request: RequestInit = { ...rest, redirect: "manual" };
      for (let hop = 0; ; hop++) {
        await check(current);
        const res = await fetch(current, request);
        const location = res.headers.get("location");
        if (res.status < 300 || res.status >= 400 || !location || hop >= maxRedirects) return res;
        await res.body?.cancel();
        current = new URL(location, current);
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && request.method && request.method !== "GET" && request.method !== "HEAD")) {
          request = { ...request, method: "GET", body: undefined };
        }
      }
    },
  };
}

/** One-off form: throws OutboundRefusedError unless the URL may be called. */
export async function assertPublicUrl(url: string | URL, opts: { allowPrivate: boolean; lookup?: Lookup }): Promise<void> {
  await createOutboundGuard({ ...opts, ttlMs: 0 }).check(url);
}
