import { join } from "node:path";

const TLS_DIR = join(import.meta.dir, "../../fixtures/tls");
/** The test CA that signed the receiver's certificate: point WEBHOOK_CA_FILE here. */
export const TEST_CA_FILE = join(TLS_DIR, "ca.pem");

export interface Received {
  headers: Headers;
  /** The raw body, exactly as received. */
  body: string;
  path: string;
  at: number;
}

export type Reply = (req: Received, nth: number) => Response | Promise<Response> | "hang";

export interface WebhookReceiver {
  url: string;
  port: number;
  received: Received[];
  /** Changes how the next requests are answered. */
  reply: Reply;
  /** Resolves once `count` requests (in total) have arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  stop(): void;
}

/**
 * A real HTTPS receiver on loopback (certificate from fixtures/tls). By
 * default it answers 204; "hang" never answers (until stop).
 */
export function startWebhookReceiver(reply: Reply = () => new Response(null, { status: 204 }), opts: { port?: number } = {}): WebhookReceiver {
  const received: Received[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const hanging: Array<() => void> = [];
  const state = { reply };
  const server = Bun.serve({
    port: opts.port ?? 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    tls: { cert: Bun.file(join(TLS_DIR, "server.pem")), key: Bun.file(join(TLS_DIR, "server.key")) },
    async fetch(req) {
      const r: Received = { headers: req.headers, body: await req.text(), path: new URL(req.url).pathname, at: Date.now() };
      received.push(r);
      for (const w of waiters.filter((w) => received.length >= w.count)) w.resolve();
      const answer = await state.reply(r, received.length);
      if (answer === "hang") return new Promise<Response>((resolve) => hanging.push(() => resolve(new Response(null, { status: 499 }))));
      return answer;
    },
  });
  return {
    url: `https://127.0.0.1:${server.port}/hooks`,
    port: server.port!,
    received,
    get reply() {
      return state.reply;
    },
    set reply(r: Reply) {
      state.reply = r;
    },
    waitFor(count, timeoutMs = 5000) {
      if (received.length >= count) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`Receiver got ${received.length} of ${count} requests within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ count, resolve: () => (clearTimeout(timer), resolve(received)) });
      });
    },
    stop() {
      for (const h of hanging) h();
      server.stop(true);
    },
  };
}
