import { join } from "node:path";
import { FIXTURES } from "./file-server.ts";

/**
 * A real HTTP origin for sources that misbehave, beside plain fixture files:
 *
 * - `/trickle/<anything>`: answers 200 with headers, then one byte every
 *   `trickleMs`, forever (until the client goes away);
 * - `/silent/<anything>`: headers, then nothing;
 * - `/no-headers/<anything>`: accepts the request and never answers;
 * - `/loop/<anything>`: a 302 to itself;
 * - `/files/<fixture>`: the fixture.
 *
 * It counts requests per path and the trickle connections open at once (per
 * path prefix) and at most.
 */
export function startHostileOrigin(opts: { trickleMs?: number } = {}) {
  const trickleMs = opts.trickleMs ?? 200;
  const hits = new Map<string, number>();
  const open = new Map<string, number>();
  const maxOpen = new Map<string, number>();
  const timers = new Set<ReturnType<typeof setInterval>>();
  const hanging = new Set<() => void>();

  const track = (key: string, delta: number) => {
    const n = (open.get(key) ?? 0) + delta;
    open.set(key, n);
    maxOpen.set(key, Math.max(maxOpen.get(key) ?? 0, n));
  };

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const [, kind, rest] = /^\/([^/]+)\/(.*)$/.exec(path) ?? [];
      const group = url.searchParams.get("group") ?? "default";
      if (kind === "trickle") {
        let timer: ReturnType<typeof setInterval> | undefined;
        const stop = () => {
          if (!timer) return;
          clearInterval(timer);
          timers.delete(timer);
          timer = undefined;
          track(group, -1);
        };
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            track(group, +1);
            timer = setInterval(() => {
              try {
                controller.enqueue(new Uint8Array([0]));
              } catch {
                stop();
              }
            }, trickleMs);
            timers.add(timer);
            req.signal.addEventListener("abort", stop, { once: true });
          },
          cancel: stop,
        });
        return new Response(body, { headers: { "content-type": "video/mp4" } });
      }
      if (kind === "silent") {
        const body = new ReadableStream<Uint8Array>({ start() {} });
        return new Response(body, { headers: { "content-type": "video/mp4" } });
      }
      if (kind === "no-headers") {
        return new Promise<Response>((resolve) => {
          const end = () => resolve(new Response(null, { status: 504 }));
          hanging.add(end);
          req.signal.addEventListener("abort", end, { once: true });
        });
      }
      if (kind === "loop") return new Response(null, { status: 302, headers: { location: path } });
      if (kind === "files") {
        const file = Bun.file(join(FIXTURES, (rest ?? "").replace(/\.\./g, "")));
        if (await file.exists()) return new Response(file);
      }
      return new Response("not found", { status: 404 });
    },
  });

  return {
    url: (path: string) => `http://127.0.0.1:${server.port}/${path.replace(/^\//, "")}`,
    hits: (path: string) => hits.get(path.startsWith("/") ? path : `/${path}`) ?? 0,
    /** Trickle connections open now / at most, for `?group=` (default "default"). */
    openTrickles: (group = "default") => open.get(group) ?? 0,
    maxOpenTrickles: (group = "default") => maxOpen.get(group) ?? 0,
    stop() {
      for (const t of timers) clearInterval(t);
      for (const end of hanging) end();
      server.stop(true);
    },
  };
}
