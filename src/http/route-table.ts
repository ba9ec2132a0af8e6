/**
 * The app's routes as a table, built once from its own route list (`app.routes`):
 *
 * - `find(method, path)`: the route template of a request Elysia answered
 *   before routing it (a 401 or 429 from the onRequest hook, a refused body):
 *   Elysia routes after onRequest, so those responses carry no matched route
 *   (src/ops, the access log and metrics).
 * - `methodsAt(path)`: every method some route takes at `path`, for the 405's
 *   `Allow` (create-app.ts): HEAD wherever GET is, as Elysia answers it.
 *
 * Static paths by a Map, then patterns in registration order; a trailing slash
 * is optional as in Elysia's default (non-strict) paths.
 */
export function createRouteTable(routes: ReadonlyArray<{ method: string; path: string }>) {
  const statics = new Map<string, string>();
  const staticMethods = new Map<string, Set<string>>();
  const patterns: Array<{ method: string; re: RegExp; path: string }> = [];
  const trim = (p: string) => (p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p);
  for (const r of routes) {
    const method = r.method.toUpperCase();
    if (!r.path.includes(":") && !r.path.includes("*")) {
      const p = trim(r.path);
      const key = `${method} ${p}`;
      if (!statics.has(key)) statics.set(key, r.path);
      const set = staticMethods.get(p) ?? new Set<string>();
      set.add(method);
      staticMethods.set(p, set);
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
    /** The methods routes take at `path`, sorted (empty: no route has this path). */
    methodsAt(path: string): string[] {
      const p = trim(path);
      const methods = new Set(staticMethods.get(p));
      for (const r of patterns) if (r.re.test(p)) methods.add(r.method);
      if (methods.has("GET")) methods.add("HEAD");
      return [...methods].sort();
    },
  };
}
