/**
 * The bench's HTTPS receiver, on its own thread so it does not compete with
 * the dispatcher's event loop. Records (delivery id, arrival time); answers 204.
 * Messages: {type:"start"} → {type:"started", port}; {type:"drain"} → {type:"arrivals", ids, at}.
 */
import { join } from "node:path";

declare const self: Worker;
const TLS_DIR = join(import.meta.dir, "../fixtures/tls");
let ids: string[] = [];
let at: number[] = [];
const now = () => performance.timeOrigin + performance.now();

self.onmessage = (e: MessageEvent) => {
  const msg = e.data as { type: string };
  if (msg.type === "start") {
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      tls: { cert: Bun.file(join(TLS_DIR, "server.pem")), key: Bun.file(join(TLS_DIR, "server.key")) },
      async fetch(req) {
        await req.arrayBuffer();
        at.push(now());
        ids.push(req.headers.get("x-service-delivery") ?? "");
        return new Response(null, { status: 204 });
      },
    });
    postMessage({ type: "started", port: server.port });
  } else if (msg.type === "drain") {
    postMessage({ type: "arrivals", ids, at });
    ids = [];
    at = [];
  }
};
