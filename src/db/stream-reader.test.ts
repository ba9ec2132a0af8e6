import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "@libsql/client";
import { type Sqld, startSqld } from "../../test/support/sqld.ts";
import { createStreamReader } from "./stream-reader.ts";

setDefaultTimeout(120_000);

/** The hot path's kept stream on a real sqld: over ws (libsql:), over HTTP, and through an HTTP-only proxy. */
let sqld: Sqld;
let proxy: ReturnType<typeof Bun.serve>;
let proxied = 0;
beforeAll(async () => {
  sqld = await startSqld();
  // Forwards HTTP only: a WebSocket upgrade gets a 400, as from a proxy that does not pass them.
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (req.headers.get("upgrade")) return new Response("no websockets here", { status: 400 });
      proxied++;
      const url = new URL(req.url);
      const headers = new Headers(req.headers);
      headers.delete("host");
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      const res = await fetch(`${sqld.httpUrl}${url.pathname}${url.search}`, { method: req.method, headers, body });
      const out = new Headers(res.headers);
      out.delete("content-encoding");
      out.delete("content-length");
      return new Response(await res.arrayBuffer(), { status: res.status, headers: out });
    },
  });
  const c = createClient({ url: sqld.url });
  await c.execute("CREATE TABLE k (id TEXT PRIMARY KEY, v INTEGER)");
  await c.execute("INSERT INTO k VALUES ('a', 1)");
  c.close();
});
afterAll(async () => {
  proxy?.stop(true);
  await sqld?.stop();
});

async function commitsAreReadAtOnce(url: string) {
  const reader = createStreamReader({ url, timeoutMs: 10_000 });
  const writer = createClient({ url: sqld.url });
  try {
    for (let v = 2; v < 6; v++) {
      await writer.execute({ sql: "UPDATE k SET v = ? WHERE id = 'a'", args: [v] });
      // Concurrent reads share the stream; each sees the commit made before it was asked.
      const rows = await Promise.all([reader.all("SELECT v FROM k WHERE id = ?", ["a"]), reader.all("SELECT v FROM k WHERE id = ?", ["a"])]);
      expect(rows).toEqual([[[v]], [[v]]]);
    }
  } finally {
    reader.close();
    writer.close();
  }
}

test("libsql: (a WebSocket) and http: read the last commit of another client on every read", async () => {
  await commitsAreReadAtOnce(sqld.url);
  await commitsAreReadAtOnce(sqld.httpUrl);
  await commitsAreReadAtOnce(sqld.wsUrl);
});

test("a libsql: URL whose server refuses WebSockets is read over HTTP instead", async () => {
  const before = proxied;
  await commitsAreReadAtOnce(`libsql://127.0.0.1:${proxy.port}?tls=0`);
  expect(proxied).toBeGreaterThan(before);
});

test("a closed reader refuses reads instead of opening a new connection", async () => {
  const reader = createStreamReader({ url: sqld.url, timeoutMs: 10_000 });
  expect(await reader.all("SELECT v FROM k WHERE id = ?", ["a"])).toHaveLength(1);
  reader.close();
  await expect(reader.all("SELECT v FROM k WHERE id = ?", ["a"])).rejects.toThrow();
});
