import { clientAddressKey } from "../../media/rtmp/client-address.ts";

/**
 * The client's address for per-address limits (sign-in throttling, the DRM
 * licence limit, WHIP publishers, live viewer counts). Behind a
 * reverse proxy the socket's peer is the proxy, so every client would share
 * one allowance; with TRUST_PROXY=N (the proxies in front, each appending the
 * address it saw to X-Forwarded-For) the client is the Nth entry from the
 * right. Entries further left are whatever the client sent and are never
 * trusted. With TRUST_PROXY=0 the header is ignored (a client could forge it).
 */
export function clientAddress(request: Request, socketAddress: string | undefined, trustProxy: number): string {
  const socket = socketAddress ?? "unknown";
  if (trustProxy <= 0) return socket;
  const header = request.headers.get("x-forwarded-for");
  if (!header) return socket;
  const entries = header
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  if (entries.length === 0) return socket;
  // Fewer entries than hops: the request skipped a proxy; the leftmost is the furthest address known.
  const picked = entries[Math.max(0, entries.length - trustProxy)]!;
  // A rate-limit key, not an identity: bounded so a forged header cannot make huge keys.
  return picked.slice(0, 64);
}

/**
 * The client's address as one allowance of a per-address limit: IPv4 as it
 * is, IPv6 by its /64 (one host holds a whole /64 and could rotate through
 * it), the grouping RTMP and WHIP already count connections by
 * (media/rtmp/client-address.ts). Used by sign-in and the DRM licence.
 */
export function clientAddressGroup(request: Request, socketAddress: string | undefined, trustProxy: number): string {
  return clientAddressKey(clientAddress(request, socketAddress, trustProxy));
}
