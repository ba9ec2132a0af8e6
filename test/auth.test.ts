import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { apiKeys } from "../src/db/schema/index.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(() => t.stop());

async function snapshot(res: Response) {
  // Per response by design: the date, and the request id (X-Request-Id, src/ops).
  const headers = [...res.headers.entries()].filter(([k]) => k !== "date" && k !== "x-request-id");
  return { status: res.status, headers, body: await res.text() };
}

describe("API keys", () => {
  test("missing, malformed, unknown, revoked and expired keys give byte-identical 401s", async () => {
    const other = await t.service.orgs.createOrg("revoked-one");
    await t.service.orgs.revokeKey(other.org.id);
    const expiring = await t.service.orgs.createOrg("expired-one");
    const prefix = expiring.apiKey.split("_")[2]!;
    await t.service.database.write((tx) =>
      tx
        .update(apiKeys)
        .set({ expiresAt: Date.now() - 1000 })
        .where(eq(apiKeys.prefix, prefix)),
    );
    const wrongSecret = t.apiKey.slice(0, -1) + (t.apiKey.endsWith("a") ? "b" : "a");

    const cases: Array<[string, Record<string, string>]> = [
      ["missing", {}],
      ["malformed bearer", { authorization: "Bearer nope" }],
      ["malformed scheme", { authorization: `Basic ${t.apiKey}` }],
      ["unknown", { authorization: "Bearer sk_live_AAAAAAAAAAAA_" + "B".repeat(32) }],
      ["wrong secret", { authorization: `Bearer ${wrongSecret}` }],
      ["revoked", { "x-api-key": other.apiKey }],
      ["expired", { authorization: `Bearer ${expiring.apiKey}` }],
    ];
    const results = [];
    for (const [, headers] of cases) {
      results.push(await snapshot(await fetch(`${t.base}/api/public/v1/organization/`, { headers })));
    }
    expect(results[0]!.status).toBe(401);
    expect(JSON.parse(results[0]!.body)).toEqual({ success: false, message: expect.any(String), error: { code: "INVALID_API_KEY" } });
    for (const r of results) expect(r).toEqual(results[0]!);
  });

  test("both header forms authenticate", async () => {
    const a = await fetch(`${t.base}/api/public/v1/organization/`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    const b = await fetch(`${t.base}/api/public/v1/organization/`, { headers: { "x-api-key": t.apiKey } });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    const body = await ok(a, "getOrganization");
    expect(body.success).toBe(true);
    expect(body.data.organization.id).toBe(t.orgId);
    expect(body.meta.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test("rotation: a second key is refused with 409, revoke gives 401 at once, a new key works", async () => {
    const { org, apiKey } = await t.service.orgs.createOrg("rotating");
    const call = (key: string) => t.api("/organization/", { key });
    expect((await call(apiKey)).status).toBe(200);
    await expect(t.service.orgs.createKey(org.id)).rejects.toMatchObject({ code: "API_KEY_EXISTS" }); // 409 on the wire: src/http/domain-error-map.test.ts
    await t.service.orgs.revokeKey(org.id);
    expect((await call(apiKey)).status).toBe(401);
    const { apiKey: next } = await t.service.orgs.createKey(org.id);
    expect((await call(apiKey)).status).toBe(401);
    expect((await call(next)).status).toBe(200);
  });

  test("an expired key is not live: a new key can be created at once; it authenticates, the expired one stays 401", async () => {
    const { org, apiKey: old } = await t.service.orgs.createOrg("expiring");
    await t.service.database.write((tx) =>
      tx
        .update(apiKeys)
        .set({ expiresAt: Date.now() - 1000 })
        .where(eq(apiKeys.prefix, old.split("_")[2]!)),
    );
    expect((await t.api("/organization/", { key: old })).status).toBe(401);
    const { apiKey: next } = await t.service.orgs.createKey(org.id);
    expect((await t.api("/organization/", { key: next })).status).toBe(200);
    expect((await t.api("/organization/", { key: old })).status).toBe(401);
    // Still one live key per organization, enforced by the database's partial unique index.
    await expect(t.service.orgs.createKey(org.id)).rejects.toMatchObject({ code: "API_KEY_EXISTS" }); // 409 on the wire: src/http/domain-error-map.test.ts
    expect((await t.service.orgs.listKeys(org.id)).map((k) => k.status)).toEqual(["live", "expired"]);
  });

  test("the secret is stored only as a hash", async () => {
    const rows = await t.service.database.db.select().from(apiKeys);
    const secret = t.apiKey.split("_")[3]!;
    for (const r of rows) expect(JSON.stringify(r)).not.toContain(secret);
  });

  test("a key's organization lacking a permission gets 403 with the missing codenames", async () => {
    const { org, apiKey } = await t.service.orgs.createOrg("restricted");
    await t.service.orgs.updateSettings(org.id, (s) => ({ ...s, permissions: s.permissions.filter((p) => p !== "organization.read") }));
    const res = await t.api("/organization/", { key: apiKey });
    expect(res.status).toBe(403);
    const body = await failed(res, "getOrganization");
    expect(body).toMatchObject({ success: false, error: { code: "PERMISSION_DENIED", details: ["organization.read"] } });
    expect(body.meta!.timestamp).toBeString();
  });
});

describe("envelope on failure paths", () => {
  test("an unknown route answers 404 in the envelope, but only after authentication", async () => {
    const res = await t.api("/does-not-exist/");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ success: false, error: { code: "NOT_FOUND" }, meta: { timestamp: expect.any(String) } });
    const anon = await t.api("/does-not-exist/", { key: null });
    expect(anon.status).toBe(401);
  });

  test("the OpenAPI document describes the routes and both auth headers; the docs page needs no CDN", async () => {
    // Untyped on purpose: the OpenAPI document itself (not an API answer), walked by path and key; the test asserts each step it reads.
    const doc = (await (await fetch(`${t.base}/openapi/json`)).json()) as any;
    expect(doc.openapi).toStartWith("3.1");
    expect(doc.paths["/api/public/v1/organization/"]).toBeDefined();
    expect(doc.components.securitySchemes.apiKeyHeader).toMatchObject({ type: "apiKey", in: "header", name: "X-API-Key" });
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    const page = await (await fetch(`${t.base}/openapi`)).text();
    const scripts = [...page.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) {
      expect(src.startsWith("/")).toBe(true);
      const js = await fetch(`${t.base}${src}`);
      expect(js.status).toBe(200);
      expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    }
  });
});

describe("envelope on unexpected failures", () => {
  test("an oversized JSON body is refused in the envelope before it is read: 413 PAYLOAD_TOO_LARGE", async () => {
    const big = JSON.stringify({ source_url: "https://example.com/a.mp4", title: "x".repeat(1024 * 1024 + 10) });
    const res = await t.api("/videos/", { method: "POST", body: big, headers: { "content-type": "application/json" } });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ success: false, error: { code: "PAYLOAD_TOO_LARGE", details: { body: "must be at most 1048576 bytes" } } });
  });

  test("a JSON body without a length (chunked) within the limit is read (counted as it arrives; test/body-limits.test.ts for one past it)", async () => {
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"source_url":"https://example.com/chunked.mp4"}'));
        c.close();
      },
    });
    const res = await t.api("/videos/", { method: "POST", body, headers: { "content-type": "application/json" } });
    expect(res.status).toBe(201);
  });

  test("an unexpected exception is a 500 envelope with a generic message; details only in the log", async () => {
    const lines: string[] = [];
    const { createLogger } = await import("../src/log.ts");
    const broken = await startTestService({ listen: false, logger: createLogger({ write: (l) => lines.push(l) }) });
    try {
      // Break the database under the running app.
      await broken.service.database.close();
      const res = await broken.api("/organization/");
      expect(res.status).toBe(500);
      const body = await failed(res, "getOrganization");
      expect(body).toEqual({ success: false, message: "Internal server error.", error: { code: "INTERNAL_ERROR" }, meta: { timestamp: expect.any(String) } });
      const logged = lines.map((l) => JSON.parse(l)).find((l) => l.level === "error");
      expect(logged).toMatchObject({ msg: expect.stringContaining("Unhandled"), err: { message: expect.any(String) } });
    } finally {
      await broken.stop().catch(() => undefined);
    }
  });
});
