import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { FIXTURES } from "./support/file-server.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { type Ok, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * Uploads from a browser page on another origin: the presigned upload URL and
 * the tus endpoint answer CORS preflights, and Debian's Chromium, on a page
 * served by a Bun.serve on another port, uploads with fetch PUT and with
 * tus-js-client's browser build (served by that page server, nothing from a CDN).
 */
const FIXTURE = join(FIXTURES, "av-360p-2s.mp4");
const TUS_JS = join(import.meta.dir, "..", "node_modules", "tus-js-client", "dist", "tus.min.js");
const PAGE = `<!doctype html><meta charset="utf-8"><title>upload</title><script src="/tus.min.js"></script>
<script>
async function fixture() { return (await fetch("/fixture.mp4")).blob(); }
async function putUpload(url) {
  const res = await fetch(url, { method: "PUT", body: await fixture(), headers: { "content-type": "video/mp4" } });
  return { status: res.status, body: await res.json() };
}
async function tusUpload(endpoint, headers) {
  const file = await fixture();
  return new Promise((resolve) => {
    let sourceUrl = null;
    const patches = [];
    const upload = new tus.Upload(file, {
      endpoint, headers, chunkSize: 64 * 1024, retryDelays: [],
      metadata: { filename: "clip.mp4", filetype: "video/mp4" },
      onAfterResponse(req, res) {
        if (req.getMethod() === "POST") sourceUrl = res.getHeader("X-Source-Url");
        if (req.getMethod() === "PATCH") patches.push(Number(res.getHeader("Upload-Offset")));
      },
      onSuccess() { resolve({ ok: true, url: upload.url, sourceUrl, patches }); },
      onError(err) { resolve({ ok: false, error: String(err) }); },
    });
    upload.start();
  });
}
</script>`;

/** What PAGE's script answers: `putUpload` the PUT's status and JSON body, `tusUpload` tus-js-client's outcome. */
type TusResult = { ok: boolean; url?: string; sourceUrl: string | null; patches: number[]; error?: string };
interface UploadPage {
  putUpload(url: string): Promise<unknown>;
  tusUpload(url: string, headers: Record<string, string>): Promise<TusResult>;
}

let t: TestService;
let page: ReturnType<typeof Bun.serve> | undefined;
let browser: Browser | undefined;
const pageOrigin = () => `http://127.0.0.1:${page!.port}`;

beforeAll(async () => {
  t = await startTestService({ env: { MEDIA_BACKEND: "native" } });
  page = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/") return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
      if (path === "/tus.min.js") return new Response(Bun.file(TUS_JS), { headers: { "content-type": "text/javascript" } });
      if (path === "/fixture.mp4") return new Response(Bun.file(FIXTURE), { headers: { "content-type": "video/mp4" } });
      return new Response("not found", { status: 404 });
    },
  });
  if (hasChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  page?.stop(true);
  await t?.stop();
});

async function presign() {
  return (await ok(t.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl")).data;
}

describe("CORS preflights", () => {
  test("the presigned upload_url answers OPTIONS, and its PUT answers (refusals too) carry Allow-Origin", async () => {
    const up = await presign();
    const pre = await fetch(up.upload_url, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "PUT", "access-control-request-headers": "content-type" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-methods")).toContain("PUT");
    expect(pre.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("content-type");
    expect(Number(pre.headers.get("access-control-max-age"))).toBeGreaterThan(0);

    const forged = await fetch(up.upload_url.replace(/sig=[0-9a-f]/, "sig=x"), { method: "PUT", body: "x", headers: { origin: "https://app.example" } });
    expect(forged.status).toBe(403);
    expect(forged.headers.get("access-control-allow-origin")).toBe("*");
  });

  test("the tus endpoint and an upload's URL answer OPTIONS without a key; answers expose the tus headers", async () => {
    const endpoint = `${t.base}/api/public/v1/videos/uploads/`;
    const pre = await fetch(endpoint, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "tus-resumable,upload-length,upload-metadata" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    for (const m of ["POST", "HEAD", "PATCH", "DELETE"]) expect(pre.headers.get("access-control-allow-methods")).toContain(m);
    for (const h of ["Tus-Resumable", "Upload-Length", "Upload-Offset", "Upload-Metadata", "Content-Type", "Authorization", "X-API-Key"]) {
      expect(pre.headers.get("access-control-allow-headers")).toContain(h);
    }
    expect(Number(pre.headers.get("access-control-max-age"))).toBeGreaterThan(0);
    expect(pre.headers.get("tus-version")).toBe("1.0.0");
    expect(pre.headers.get("tus-max-size")).toBeTruthy();

    const created = await fetch(endpoint, { method: "POST", headers: { origin: "https://app.example", authorization: `Bearer ${t.apiKey}`, "tus-resumable": "1.0.0", "upload-length": "5" } });
    expect(created.status).toBe(201);
    expect(created.headers.get("access-control-allow-origin")).toBe("*");
    for (const h of ["Location", "Upload-Offset", "Upload-Length", "Tus-Resumable", "X-Source-Url"]) expect(created.headers.get("access-control-expose-headers")).toContain(h);
    const upl = await fetch(created.headers.get("location")!, { method: "OPTIONS", headers: { origin: "https://app.example", "access-control-request-method": "PATCH" } });
    expect(upl.status).toBe(204);
    expect(upl.headers.get("access-control-allow-methods")).toContain("PATCH");
  });
});

describe.skipIf(!hasChromium)("Chromium, on a page of another origin", () => {
  if (!hasChromium) console.warn(CHROMIUM_MISSING);

  test("uploads with fetch PUT to upload_url and with tus-js-client to tus_url (token) and to the endpoint (key); all registrable", async () => {
    const tab = await browser!.newPage();
    try {
      await tab.goto(`${pageOrigin()}/`);
      expect(pageOrigin()).not.toBe(new URL(t.base).origin);
      const bytes = readFileSync(FIXTURE);

      const put = await presign();
      const putResult = (await tab.evaluate((url) => (globalThis as unknown as UploadPage).putUpload(url), put.upload_url)) as { status: number; body: Ok<"uploadFile"> };
      expect(putResult.status).toBe(200);
      expect(putResult.body.data.size_bytes).toBe(String(bytes.byteLength));

      const viaToken = await presign();
      const tokenResult = (await tab.evaluate((url) => (globalThis as unknown as UploadPage).tusUpload(url, {}), viaToken.tus_url)) as TusResult;
      expect(tokenResult).toMatchObject({ ok: true, sourceUrl: viaToken.source_url });
      // Several PATCHes of 64 KiB: the client went through the resumable path, not one request.
      expect(tokenResult.patches.length).toBeGreaterThanOrEqual(3);
      expect(tokenResult.patches.at(-1)).toBe(bytes.byteLength);

      const endpoint = `${t.base}/api/public/v1/videos/uploads/`;
      const keyResult = (await tab.evaluate(([url, key]) => (globalThis as unknown as UploadPage).tusUpload(url, { Authorization: `Bearer ${key}` }), [endpoint, t.apiKey] as const)) as TusResult;
      expect(keyResult.ok).toBe(true);
      expect(keyResult.sourceUrl).toStartWith(`${t.base}/uploads/upl_`);

      for (const [id, sourceUrl] of [
        [put.upload_id, put.source_url],
        [viaToken.upload_id, viaToken.source_url],
        [keyResult.sourceUrl!.split("/").pop()!, keyResult.sourceUrl!],
      ] as const) {
        expect(Buffer.compare(readFileSync(join(t.dataDir, "uploads", id)), bytes)).toBe(0);
        const reg = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl } });
        expect(reg.status).toBe(201);
      }
    } finally {
      await tab.close();
    }
  }, 60_000);
});
