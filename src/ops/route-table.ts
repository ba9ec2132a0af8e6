/**
 * The route template of a request Elysia answered before routing it (a 401 or
 * 429 from the onRequest hook, a refused body): Elysia routes after onRequest,
 * so those responses carry no matched route. Built once from the app's own
 * route list, and consulted only for such responses (the routed ones carry
 * Elysia's `route`). Static paths by a Map, then patterns in registration
 * order; a trailing slash is optional as in Elysia's default (non-strict) paths.
 */
export function createRouteTable(routes: ReadonlyArray<{ method: string; path: string }>) {
  const statics = new Map<string, string>();
  const patterns: Array<{ method: string; re: RegExp; path: string }> = [];
  const trim = (p: string) => (p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p);
  for (const r of routes) {
    const method = r.method.toUpperCase();
    if (!r.path.includes(":") && !r.path.includes("*")) {
      const key = `${method} ${trim(r.path)}`;
      if (!statics.has(key)) statics.set(key, r.path);
      continue;
    }
    const source = trim(r.path)
      .split("/")
      .map((seg) => (seg === "*" ? ".*" : seg.startsWith(":") ? "[^/]+" : seg.replace(/[.+?^${}()|[\]\\]/g, "\\$&")))
      .join("/");
    patterns.push({ method, re: new RegExp(`^${source}/?$`), path: r.path });
  }
  return {
    /** The template `path` matches for `method`, or null. */
    find(method: string, path: string): string | null {
      const p = trim(path);
      const hit = statics.get(`${method} ${p}`) ?? statics.get(`ALL ${p}`) ?? (method === "HEAD" ? statics.get(`GET ${p}`) : undefined);
      if (hit) return hit;
      for (const r of patterns) if ((r.method === method || r.method === "ALL" || (method === "HEAD" && r.method === "GET")) && r.re.test(p)) return r.path;
      return null;
    },
  };
}
