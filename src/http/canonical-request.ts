/**
 * Routing must not depend on the Host header. Bun builds `request.url` from it:
 * `http://<host><target>` for a host it accepts, only the target (`/path?q`)
 * for one it does not (`Host: a/b`, an empty Host, HTTP/1.0 without one).
 * Elysia finds the path at the first "/" from index 11, i.e. it assumes a host
 * of at least 4 characters: `Host: abc` made every route 404, and `Host: x`
 * with a crafted path made Elysia route a path the authentication hook never
 * saw. So every request whose URL is not `http(s)://<4+ chars>/…` is rebuilt on
 * a fixed origin; the others (every real client) pass through untouched.
 */
export const CANONICAL_ORIGIN = "http://localhost";

/** Index where the path starts, or -1 if the URL is not absolute http(s). */
function pathStart(url: string): number {
  let from: number;
  if (url.startsWith("http://")) from = 7;
  else if (url.startsWith("https://")) from = 8;
  else return -1;
  return url.indexOf("/", from);
}

/** The path and query of a request URL, absolute or origin-relative. */
export function targetOf(url: string): string {
  if (url.startsWith("/")) return url;
  const s = pathStart(url);
  if (s < 0) {
    const q = url.indexOf("?", 8);
    return q < 0 ? "/" : "/" + url.slice(q);
  }
  return url.slice(s);
}

export function canonicalRequest(req: Request): Request {
  const url = req.url;
  const s = pathStart(url);
  // Elysia reads the path from the first "/" at or after index 11.
  if (s >= 11) return req;
  return new Request(CANONICAL_ORIGIN + targetOf(url), req);
}

/**
 * The path exactly as Elysia's router computes it (first "/" from index 11,
 * up to "?"), so the authentication hook always looks at the path that is routed.
 */
export function routedPath(url: string): string {
  const s = url.indexOf("/", 11);
  if (s < 0) return "/";
  const q = url.indexOf("?", s + 1);
  return q < 0 ? url.slice(s) : url.slice(s, q);
}
