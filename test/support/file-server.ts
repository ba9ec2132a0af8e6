import { join } from "node:path";

export const FIXTURES = join(import.meta.dir, "..", "..", "fixtures");

/** A real HTTP origin for source_url tests: serves fixtures/, counts hits, can stall. */
export function startFileServer(opts: { stallPaths?: string[] } = {}) {
  const hits = new Map<string, number>();
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const path = new URL(req.url).pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      if (opts.stallPaths?.includes(path)) {
        await Bun.sleep(120_000);
      }
      const file = Bun.file(join(FIXTURES, path.replace(/^\/+/, "").replace(/\.\./g, "")));
      if (!(await file.exists())) return new Response("not found", { status: 404 });
      return new Response(file);
    },
  });
  return {
    url: (path: string) => `http://127.0.0.1:${server.port}/${path.replace(/^\//, "")}`,
    hits: (path: string) => hits.get(path.startsWith("/") ? path : `/${path}`) ?? 0,
    stop: () => server.stop(true),
  };
}
