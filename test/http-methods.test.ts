import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed } from "./support/api.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 23 item 18, against the running service over HTTP: a known path asked
 * with a method it does not take is 405 METHOD_NOT_ALLOWED in the envelope
 * with `Allow` (it was 404), for every path the service serves; an id longer
 * than 64 characters is 404 like any unknown id (it was 422).
 */
let t: TestService;
beforeAll(async () => {
  t = await startTestService();
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

const PROBES = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
const HEX40 = "ab".repeat(20);

/** A concrete path for a route template: parameters filled with values no static segment uses. */
const fill = (template: string) =>
  template
    .split("/")
    .map((seg) => (seg === "*" ? "zz/9.ts" : seg === ":token" ? HEX40 : seg.startsWith(":") ? "zz9" : seg))
    .join("/");

/** The templates (Elysia syntax) whose pattern matches `path`. */
function templatesMatching(templates: string[], path: string): string[] {
  const trim = (p: string) => (p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p);
  return templates.filter((tpl) => {
    const re = trim(tpl)
      .split("/")
      .map((seg) => (seg === "*" ? ".*" : seg.startsWith(":") ? "[^/]+" : seg.replace(/[.+?^${}()|[\]\\]/g, "\\$&")))
      .join("/");
    return new RegExp(`^${re}/?$`).test(trim(path));
  });
}

const send = (method: string, path: string) => fetch(`${t.base}${path}`, { method, headers: { authorization: `Bearer ${t.apiKey}` }, redirect: "manual" });

describe("405 with Allow", () => {
  test("the contract's examples: PUT on a video, DELETE on /videos/, DELETE on /organization/", async () => {
    const put = await send("PUT", "/api/public/v1/videos/vid_x/");
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("DELETE, GET, HEAD");
    expect(await put.json()).toMatchObject({ success: false, error: { code: "METHOD_NOT_ALLOWED" }, meta: { timestamp: expect.any(String) } });
    const list = await send("DELETE", "/api/public/v1/videos/");
    expect(list.status).toBe(405);
    expect(list.headers.get("allow")).toBe("GET, HEAD, POST");
    const del = await send("DELETE", "/api/public/v1/organization");
    expect(del.status).toBe(405);
    expect(del.headers.get("allow")).toBe("GET, HEAD");
    // Authentication still comes first on the API; an unknown path is still 404.
    expect((await fetch(`${t.base}/api/public/v1/videos/vid_x/`, { method: "PUT" })).status).toBe(401);
    expect((await send("PUT", "/api/public/v1/nothing/here/")).status).toBe(404);
  });

  test("every path the service serves: each method it does not take is 405, and Allow lists exactly the methods it does", async () => {
    const routes = t.service.app.routes as Array<{ method: string; path: string }>;
    const byTemplate = new Map<string, Set<string>>();
    for (const r of routes) byTemplate.set(r.path, (byTemplate.get(r.path) ?? new Set()).add(r.method.toUpperCase()));
    const templates = [...byTemplate.keys()];
    const checked: string[] = [];
    for (const template of templates) {
      const path = fill(template);
      // Every route that answers this concrete path (a parameter segment can match another template's static one).
      const methods = new Set(templatesMatching(templates, path).flatMap((tpl) => [...byTemplate.get(tpl)!]));
      if (methods.has("GET")) methods.add("HEAD");
      const allow = [...methods].sort().join(", ");
      for (const method of PROBES.filter((m) => !methods.has(m))) {
        const res = await send(method, path);
        expect({ path, method, status: res.status }).toEqual({ path, method, status: 405 });
        expect({ path, method, allow: res.headers.get("allow") }).toEqual({ path, method, allow });
        if (method !== "HEAD") expect((await failed(res)).error.code).toBe("METHOD_NOT_ALLOWED");
        checked.push(`${method} ${path}`);
      }
    }
    // The API, the settings screen, WHIP/WHEP, uploads, media, ops: dozens of paths, hundreds of wrong methods.
    expect(byTemplate.size).toBeGreaterThan(60);
    expect(checked.length).toBeGreaterThan(250);
  }, 120_000);
});

describe("an id longer than 64 characters is 404 like any unknown id", () => {
  test("every API route with an id answers 65+ characters as it answers an unknown id", async () => {
    const long = `vid_${"x".repeat(61)}`;
    expect(long.length).toBe(65);
    const paths = [
      ["GET", "/videos/{id}/"],
      ["DELETE", "/videos/{id}/"],
      ["POST", "/videos/{id}/drm-token/"],
      ["GET", "/livestreams/{id}/"],
      ["DELETE", "/livestreams/{id}/"],
      ["POST", "/livestreams/{id}/end/"],
      ["GET", "/webhooks/{id}/"],
      ["DELETE", "/webhooks/{id}/"],
      ["GET", "/webhooks/{id}/deliveries/"],
      ["POST", "/webhooks/{id}/deliveries/{id}/retry/"],
    ] as const;
    for (const [method, template] of paths) {
      for (const id of [long, "x".repeat(500), "unknown_1"]) {
        const res = await t.api(template.replaceAll("{id}", id), { method });
        const body = await failed(res);
        expect({ method, template, len: id.length, status: res.status, code: body.error?.code }).toEqual({ method, template, len: id.length, status: 404, code: "NOT_FOUND" });
      }
    }
    // The test event takes a body; its id too.
    const test_ = await t.api(`/webhooks/${long}/test/`, { method: "POST", json: { event: "VIDEO_UPLOADED" } });
    expect(test_.status).toBe(404);
  });
});
