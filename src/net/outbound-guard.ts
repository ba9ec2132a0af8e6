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

/**
 * IPv6 forms that carry an IPv4 address. Those a host really uses to reach an
 * IPv4 peer are judged by that IPv4 address: IPv4-mapped `::ffff:a.b.c.d`,
 * IPv4-translated `::ffff:0:a.b.c.d` (SIIT), the deprecated IPv4-compatible
 * `::a.b.c.d` (which covers `::` and `::1`) and the well-known NAT64 prefix
 * `64:ff9b::/96` (DNS64 synthesises it for public IPv4 hosts). Transition
 * prefixes where the IPv4 part is not at a fixed, visible place, or that no
 * public receiver needs, are refused whole: local-use NAT64 `64:ff9b:1::/48`
 * (the operator picks the prefix length, so where the IPv4 sits varies), 6to4
 * `2002::/16` (deprecated by RFC 7526; relays reach any IPv4 address) and
 * Teredo `2001::/32` (the client's IPv4 is obfuscated, the server's is a relay).
 */
function embeddedV4(g: number[], hi: number, lo: number): string {
  return `${g[hi]! >> 8}.${g[hi]! & 255}.${g[lo]! >> 8}.${g[lo]! & 255}`;
}

function isPrivateV6(ip: string): boolean {
  const g = v6Groups(ip);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 6)) return isPrivateV4(embeddedV4(g, 6, 7)); // ::a.b.c.d (IPv4-compatible; :: and ::1 are 0.0.0.0 and 0.0.0.1)
  if (zeros(0, 5) && g[5] === 0xffff) return isPrivateV4(embeddedV4(g, 6, 7)); // ::ffff:a.b.c.d (IPv4-mapped)
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return isPrivateV4(embeddedV4(g, 6, 7)); // ::ffff:0:a.b.c.d (IPv4-translated)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return isPrivateV4(embeddedV4(g, 6, 7)); // 64:ff9b::/96 (NAT64, well-known)
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return true; // 64:ff9b:1::/48 (NAT64, local use)
  if (g[0] === 0x2002) return true; // 2002::/16 (6to4)
  if (g[0] === 0x2001 && g[1] === 0) return true; // 2001::/32 (Teredo)
  const first = g[0]!;
  // Only global unicast (2000::/3) is public: this also refuses the rest of ::/8,
  // 100::/64 (discard), fc00::/7 (unique local), fe80::/10 (link-local),
  // fec0::/10 (old site-local) and ff00::/8 (multicast).
  if ((first & 0xe000) !== 0x2000) return true;
  if (first === 0x2001 && g[1] === 0x0db8) return true; // 2001:db8::/32 documentation
  if (first === 0x2001 && g[1] === 2 && g[2] === 0) return true; // 2001:2::/48 benchmarking
  if (first === 0x2001 && (g[1]! & 0xfff0) === 0x0020) return true; // 2001:20::/28 ORCHIDv2
  if (first === 0x2001 && (g[1]! & 0xfff0) === 0x0010) return true; // 2001:10::/28 ORCHID
  if (first === 0x3fff && (g[1]! & 0xf000) === 0) return true; // 3fff::/20 documentation
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
  /** The host of a non-HTTP target (a simulcast output's rtmp:// or srt:// URL): throws OutboundRefusedError for a private address. */
  checkHost(host: string): Promise<void>;
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
    async checkHost(host) {
      if (opts.allowPrivate) return;
      const verdict = await refusalFor(host.replace(/^\[|\]$/g, ""));
      if (verdict) throw new OutboundRefusedError(`Refusing ${verdict}`);
    },
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
