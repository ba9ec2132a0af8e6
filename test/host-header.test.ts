import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { connect } from "node:net";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

// Routing must not depend on the Host header. Elysia reads the path from the
// first "/" at index 11 or later, so `Host: abc` made valid routes 404 and
// `Host: x` with a crafted path reached a route the authentication hook never
// judged. These tests speak raw HTTP so the Host header is exactly as written.

let t: TestService;
let port: number;
beforeAll(async () => {
  t = await startTestService();
  port = Number(new URL(t.base).port);
});
afterAll(() => t.stop());

interface RawAnswer {
  status: number;
  body: string;
}

function raw(request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let data = "";
    socket.setEncoding("latin1");
    socket.on("data", (d) => (data += d));
    socket.on("error", reject);
    socket.on("close", () => {
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1] ?? 0);
      const at = data.indexOf("\r\n\r\n");
      resolve({ status, body: at < 0 ? "" : data.slice(at + 4) });
    });
    setTimeout(() => socket.destroy(), 5_000);
  });
}

function get(target: string, opts: { host?: string | null; key?: boolean; version?: string } = {}) {
  const host = opts.host === undefined ? "localhost" : opts.host;
  const lines = [`GET ${target} HTTP/${opts.version ?? "1.1"}`];
  if (host !== null) lines.push(`Host: ${host}`);
  if (opts.key) lines.push(`Authorization: Bearer ${t.apiKey}`);
  lines.push("Connection: close", "", "");
  return raw(lines.join("\r\n"));
}

const ORG = "/api/public/v1/organization/";

describe("valid routes work whatever the Host header", () => {
  for (const host of ["abc", "x", "ab", "", "a/b", "exa mple", "[::1]:1", "localhost:8080", "api.example.com"]) {
    test(`Host: ${JSON.stringify(host)}`, async () => {
      const ok = await get(ORG, { host, key: true });
      expect(ok.status).toBe(200);
      expect(JSON.parse(ok.body)).toMatchObject({ success: true, data: { organization: { id: t.orgId } } });
      expect((await get(ORG, { host, key: false })).status).toBe(401);
      // A route with an id parameter, and a query string, resolve too.
      const missing = await get("/api/public/v1/videos/vid_nope/", { host, key: true });
      expect(missing.status).toBe(404);
      expect(JSON.parse(missing.body).error.code).toBe("NOT_FOUND");
      const list = await get("/api/public/v1/livestreams/?limit=1", { host, key: true });
      expect(list.status).toBe(200);
    });
  }

  test("a POST with a body through Host: x", async () => {
    const body = JSON.stringify({ title: "short host" });
    const answer = await raw(
      [
        `POST /api/public/v1/livestreams/ HTTP/1.1`,
        "Host: x",
        `Authorization: Bearer ${t.apiKey}`,
        "Content-Type: application/json",
        `Content-Length: ${body.length}`,
        "Connection: close",
        "",
        body,
      ].join("\r\n"),
    );
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body).data.stream.title).toBe("short host");
  });

  test("no Host header: HTTP/1.0 is routed; HTTP/1.1 is refused by the server (RFC 9112) before any route", async () => {
    expect((await get(ORG, { host: null, key: true, version: "1.0" })).status).toBe(200);
    expect((await get(ORG, { host: null, key: false, version: "1.0" })).status).toBe(401);
    const bare = await get(ORG, { host: null, key: true, version: "1.1" });
    expect(bare.status).toBe(400);
    expect(bare.body).not.toContain('"success":true');
  });
});

describe("no /api path is reachable without a key", () => {
  const crafted = [
    ORG,
    "/a/api/public/v1/organization/",
    "/ab/api/public/v1/organization/",
    "/abc/api/public/v1/organization/",
    "/ab/api/public/v1/videos/",
    "/ab/api/public/v1/webhooks/",
    "//api/public/v1/organization/",
    "///api/public/v1/organization/",
    "/%61pi/public/v1/organization/",
    "/api/public/v1/%6Frganization/",
    "/API/public/v1/organization/",
    "/api/public/v1/./organization/",
    "/api/public/v1/x/../organization/",
    "/api/public/v1/organization/%2e%2e/organization/",
    "http://evil.example/api/public/v1/organization/",
    "http://x/ab/api/public/v1/organization/",
  ];
  const hosts = [null, "", "x", "ab", "abc", "abcd", "a/b", "a?b", "localhost"];
  test("every crafted path and Host: 401 or 404 in the envelope, never data, never 5xx", async () => {
    let tried = 0;
    for (const host of hosts) {
      for (const path of crafted) {
        for (const version of ["1.1", "1.0"]) {
          const a = await get(path, { host, key: false, version });
          tried++;
          expect(a.body).not.toContain('"success":true');
          expect(a.status).toBeGreaterThanOrEqual(400);
          expect(a.status).toBeLessThan(500);
          if (a.status !== 400) expect([401, 404]).toContain(a.status);
        }
      }
    }
    expect(tried).toBe(hosts.length * crafted.length * 2);
  });
});
