/**
 * The beacon writer's worker thread (beacon-store.ts): its own libSQL
 * connection to the service's database, one group commit at a time (the
 * writer sends the next only after the answer), each one `batch` in a write
 * transaction. On a file the connection is set as the service's writer
 * (`synchronous=NORMAL`, 5-s busy timeout); on a server every request is
 * bounded by DATABASE_TIMEOUT_MS like the service's own.
 */
import { type Client, createClient } from "@libsql/client";
import { type StoreWrite, storeStatements } from "./beacon-store.ts";

declare const self: Worker;

type Message = { type: "open"; url: string; authToken?: string; timeoutMs: number } | { type: "write"; write: StoreWrite } | { type: "close" };

type Open = Extract<Message, { type: "open" }>;
let config: Open | null = null;
let connecting: Promise<Client> | null = null;

async function open(m: Open): Promise<Client> {
  const isFile = m.url.startsWith("file:");
  const fetchBounded = isFile ? undefined : (request: Request) => fetch(request, { signal: AbortSignal.timeout(m.timeoutMs) });
  const c = createClient({ url: m.url, authToken: m.authToken, timeout: 5000, concurrency: 1, fetch: fetchBounded } as Parameters<typeof createClient>[0]);
  if (isFile) {
    await c.execute("PRAGMA synchronous=NORMAL");
    await c.execute("PRAGMA foreign_keys=ON");
  }
  return c;
}

/** The connection, opened on first use and again after a failed open. */
function connection(): Promise<Client> {
  if (!config) return Promise.reject(new Error("the beacon store is not open"));
  connecting ??= open(config).catch((err) => {
    connecting = null;
    throw err;
  });
  return connecting;
}

self.onmessage = async (e: MessageEvent<Message>) => {
  const m = e.data;
  if (m.type === "open") {
    config = m;
    return;
  }
  if (m.type === "close") {
    const c = connecting;
    connecting = null;
    config = null;
    await c?.then((client) => client.close()).catch(() => undefined);
    postMessage({ id: "", ok: true });
    return;
  }
  try {
    await (await connection()).batch(storeStatements(m.write), "write");
    postMessage({ id: m.write.id, ok: true });
  } catch (err) {
    postMessage({ id: m.write.id, ok: false, error: err instanceof Error ? `${err.message}${(err as { code?: string }).code ? ` (${(err as { code?: string }).code})` : ""}` : String(err) });
  }
};
