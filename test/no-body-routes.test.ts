import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { requestFrom } from "./support/http-from.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 23 item 6 (this part), against the running service over HTTP: the
 * promise of docs/decisions.md ("Routes without a body accept nothing, `{}`
 * or `null`") for every operation of the API that takes no body, by the
 * OpenAPI document's own account (no `requestBody`): GET and DELETE, and POST
 * actions such as `/end/`. Any other body is 422 (each field "is not a known
 * field", as strict input names them; `details.body` for a non-object or any
 * body on a GET) and the action does not happen (before: ignored, and the
 * stream was ended anyway).
 */
let t: TestService;
beforeAll(async () => {
  t = await startTestService();
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

const BODIES = ['{"x":1}', "[]", '"text"', "0", "true"];
const json = { "content-type": "application/json" };

async function answer(method: string, path: string, body: string | undefined) {
  // fetch sends no body with GET: a raw request carries it as a client could.
  const res = await requestFrom("127.0.0.1", `${t.base}/api/public/v1${path}`, { method, headers: { authorization: `Bearer ${t.apiKey}`, ...(body === undefined ? {} : json) }, body });
  return { status: res.status, body: res.body ? JSON.parse(res.body) : null };
}

describe("a route that takes no body refuses one (422)", () => {
  test("every operation of the document without a requestBody: GET, DELETE and POST actions", async () => {
    // Untyped on purpose: the OpenAPI document itself (not an API answer), walked by path and key; the test asserts each step it reads.
    const doc = (await (await fetch(`${t.base}/openapi/json`)).json()) as any;
    const ops: Array<[string, string]> = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      if (!path.startsWith("/api/public/v1/") || path.includes("/videos/uploads")) continue; // tus: the body is the file
      for (const [method, op] of Object.entries(item)) if (!op.requestBody) ops.push([method.toUpperCase(), path.slice("/api/public/v1".length).replace(/\{[^}]+\}/g, "zz9")]);
    }
    // GET and HEAD of every read, DELETE of each resource, POST …/end/, …/drm-token/, …/retry/.
    expect(ops.map(([m]) => m).filter((m) => m === "POST").length).toBeGreaterThanOrEqual(3);
    expect(ops.length).toBeGreaterThanOrEqual(12);
    for (const [method, path] of ops) {
      for (const body of BODIES) {
        const r = await answer(method, path, body);
        expect({ method, path, body, status: r.status, code: r.body?.error?.code }).toEqual({ method, path, body, status: 422, code: "VALIDATION_ERROR" });
        const named = body.startsWith("{") && method !== "GET" && method !== "HEAD" ? "x" : "body";
        expect({ method, path, body, details: Object.keys(r.body.error.details) }).toEqual({ method, path, body, details: [named] });
      }
    }
  }, 120_000);

  test("POST /livestreams/{id}/end/ with a body is refused and the stream stays live; nothing, {} or null end it", async () => {
    for (const accepted of [undefined, "{}", "null"]) {
      const created = await ok(t.api("/livestreams/", { method: "POST", json: { title: "no-body" } }), "createLivestream");
      const id = created.data.stream.id;
      const refused = await answer("POST", `/livestreams/${id}/end/`, '{"reason":"done"}');
      expect(refused.status).toBe(422);
      expect(refused.body.error.details).toEqual({ reason: "is not a known field" });
      expect((await ok(t.api(`/livestreams/${id}/`), "getLivestream")).data.stream.status).not.toBe("ENDED");
      const ended = await answer("POST", `/livestreams/${id}/end/`, accepted);
      expect({ accepted, status: ended.status }).toEqual({ accepted, status: 200 });
      expect(ended.body.data.stream.status).toBe("ENDED");
    }
  });

  test("DELETE /videos/{id}/ with a body is refused and the video stays; GET with a body is refused, without one it answers", async () => {
    const created = await ok(t.api("/videos/", { method: "POST", json: { source_url: "http://127.0.0.1:9/nobody.mp4" } }), "createVideo");
    const id = created.data.asset.public_id;
    expect((await answer("DELETE", `/videos/${id}/`, '{"force":true}')).status).toBe(422);
    expect((await answer("GET", `/videos/${id}/`, '{"x":1}')).status).toBe(422);
    expect((await answer("GET", `/videos/${id}/`, undefined)).status).toBe(200);
    expect((await answer("DELETE", `/videos/${id}/`, "{}")).status).toBe(200);
    expect((await answer("GET", `/videos/${id}/`, undefined)).status).toBe(404);
  });

  test("routes that take a body still take theirs", async () => {
    const r = await answer("POST", "/livestreams/", '{"title":"with a body"}');
    expect(r.status).toBe(201);
  });
});
