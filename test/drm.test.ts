import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import LibsqlDatabase from "libsql";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../src/log.ts";
import { DRM_LICENCE_LIMITS } from "../src/http/route-limits.ts";
import { createDrmTokens } from "../src/videos/drm-tokens.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * The service side of DRM (issue 11) without a transcode: the organization's
 * feature (CLI), content keys sealed at rest, licence tokens, the ClearKey
 * licence endpoint and POST /videos/{id}/drm-token/. Videos here name a
 * source that answers 404, so no transcode runs; keys are made the way the
 * transcode makes them (`drm.keys.ensure`). test/drm-e2e.test.ts packages a
 * real video.
 */
const CLI = join(import.meta.dir, "../src/cli/main.ts");
const files = startFileServer();
const lines: string[] = [];
let t: TestService;

beforeAll(async () => {
  t = await startTestService({ env: { LOG_LEVEL: "debug" }, logger: createLogger({ level: "debug", write: (l) => lines.push(l) }) });
});
afterAll(async () => {
  await t.stop();
  files.stop();
});

async function cli(...args: string[]) {
  const proc = Bun.spawn(["bun", CLI, ...args], { env: { ...process.env, DATA_DIR: t.dataDir, DATABASE_URL: t.service.config.databaseUrl }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

async function json(res: Response) {
  // Untyped on purpose: one reader for the API's envelopes and the licence service's bare `{keys, type}` alike.
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const setDrm = (orgId: string, on: boolean) => t.service.orgs.updateSettings(orgId, (s) => ({ ...s, features: { ...s.features, drm: on } }));

let n = 0;
/** A DRM video whose source answers 404 (no transcode runs), with its key made as the transcode makes it. */
async function drmVideo(key?: string) {
  const r = await json(await t.api("/videos/", { method: "POST", json: { source_url: files.url(`missing-${n++}.mp4`), drm_enabled: true }, key }));
  expect(r.status).toBe(201);
  const id: string = r.body.data.asset.public_id;
  const drmKey = await t.service.videos.drm.keys.ensure(id, key ? otherOrg.orgId : t.orgId);
  return { id, ...drmKey };
}

const b64url = (hex: string) => Buffer.from(hex, "hex").toString("base64url");

function licence(url: string, body: unknown, init: RequestInit = {}) {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body), ...init });
}

const licenceUrl = (id: string, token?: string) => `${t.base}/drm/clearkey/${id}/license${token === undefined ? "" : `?token=${token}`}`;

let otherOrg: { orgId: string; apiKey: string };

describe("the organization's DRM feature", () => {
  test("without it, drm_enabled is 409 DRM_NOT_AVAILABLE on videos and live streams and creates nothing", async () => {
    const before = (await json(await t.api("/videos/"))).body.data.items.length;
    const video = await json(await t.api("/videos/", { method: "POST", json: { source_url: files.url("av-360p-2s.mp4"), drm_enabled: true } }));
    expect([video.status, video.body.error.code]).toEqual([409, "DRM_NOT_AVAILABLE"]);
    const stream = await json(await t.api("/livestreams/", { method: "POST", json: { title: "drm", drm_enabled: true } }));
    expect([stream.status, stream.body.error.code]).toEqual([409, "DRM_NOT_AVAILABLE"]);
    expect((await json(await t.api("/videos/"))).body.data.items.length).toBe(before);
    expect((await json(await t.api("/livestreams/"))).body.data.items).toHaveLength(0);
    expect((await json(await t.api("/organization/"))).body.data.organization.features.drm).toBe(false);
  });

  test("cli org set --drm on switches it on (org show, GET /organization/), drm_enabled then creates; --drm off refuses again", async () => {
    const on = await cli("org", "set", "--org", t.orgId, "--drm", "on");
    expect({ code: on.code, err: on.err }).toEqual({ code: 0, err: "" });
    const shown = await cli("org", "show", "--org", t.orgId);
    expect(JSON.parse(shown.out).settings.features.drm).toBe(true);
    expect((await json(await t.api("/organization/"))).body.data.organization.features.drm).toBe(true);

    const video = await json(await t.api("/videos/", { method: "POST", json: { source_url: files.url("missing-cli.mp4"), drm_enabled: true } }));
    expect(video.status).toBe(201);
    expect(video.body.data.video).toMatchObject({ drm: true, drm_content_id: null, drm_license_url: null });
    const stream = await json(await t.api("/livestreams/", { method: "POST", json: { title: "protected", drm_enabled: true } }));
    expect(stream.status).toBe(201);
    expect(stream.body.data.stream.drm).toBe(true);
    await t.api(`/livestreams/${stream.body.data.stream.id}/`, { method: "DELETE" });

    expect((await cli("org", "set", "--org", t.orgId, "--drm", "off")).code).toBe(0);
    const refused = await json(await t.api("/videos/", { method: "POST", json: { source_url: files.url("missing-cli-2.mp4"), drm_enabled: true } }));
    expect([refused.status, refused.body.error.code]).toEqual([409, "DRM_NOT_AVAILABLE"]);
    expect((await cli("org", "set", "--org", t.orgId, "--drm", "maybe")).code).not.toBe(0);
    await setDrm(t.orgId, true);

    otherOrg = await t.service.orgs.createOrg("other").then((c) => ({ orgId: c.org.id, apiKey: c.apiKey }));
    await setDrm(otherOrg.orgId, true);
  });

  test("a live stream created with drm_enabled has its recording registered with drm: true", async () => {
    const id = `vid_rec${Date.now()}`;
    await t.service.database.write((tx) =>
      t.service.videos.videos.registerRecordingIn(tx, {
        id,
        orgId: t.orgId,
        title: "Protected broadcast",
        stream: { id: "ls_x", stream_key: "k".repeat(32) },
        sourcePath: join(t.dataDir, "recordings", "none.flv"),
        tags: null,
        dedupeKey: `recording:${id}`,
        drm: true,
      }),
    );
    const got = await json(await t.api(`/videos/${id}/`));
    expect(got.body.data.video).toMatchObject({ kind: "LIVESTREAM_RECORDING", drm: true });
  });
});

describe("content keys", () => {
  test("random per video, made once (a repeated run gets the same), sealed at rest and never logged", async () => {
    const a = await drmVideo();
    const b = await drmVideo();
    expect(a.keyId).toMatch(/^[0-9a-f]{32}$/);
    expect(a.key).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set([a.keyId, a.key, b.keyId, b.key]).size).toBe(4);
    // A repeat (a transcode run again after a crash) reuses the key: licences already served stay valid.
    expect(await t.service.videos.drm.keys.ensure(a.id, t.orgId)).toEqual({ keyId: a.keyId, key: a.key });
    expect(await Promise.all([1, 2, 3].map(() => t.service.videos.drm.keys.ensure(b.id, t.orgId)))).toEqual([1, 2, 3].map(() => ({ keyId: b.keyId, key: b.key })));

    const row = (await t.service.database.client.execute({ sql: "SELECT * FROM drm_keys WHERE video_id = ?", args: [a.id] })).rows[0]!;
    expect(row.key_id).toBe(a.keyId);
    expect(row.sealed_key).toMatch(/^v1\./);
    expect(row.sealed_key).not.toContain(a.key);

    if (t.service.config.databaseUrl.startsWith("file:")) {
      // Every byte of the database (a consolidated copy, and the live file with its WAL): no key, in hex, base64 or raw.
      const copy = join(t.dataDir, "..", `drm-copy-${process.pid}.db`);
      const live = new LibsqlDatabase(join(t.dataDir, "service.db"), { readonly: true });
      live.exec(`VACUUM INTO '${copy}'`);
      live.close();
      const blobs = [
        readFileSync(copy),
        ...["service.db", "service.db-wal"]
          .map((f) => join(t.dataDir, f))
          .filter(existsSync)
          .map((p) => readFileSync(p)),
      ];
      rmSync(copy);
      for (const k of [a.key, b.key]) {
        for (const blob of blobs) {
          for (const form of [Buffer.from(k), Buffer.from(k.toUpperCase()), Buffer.from(b64url(k)), Buffer.from(Buffer.from(k, "hex").toString("base64")), Buffer.from(k, "hex")]) {
            expect(blob.includes(form)).toBe(false);
          }
        }
      }
      // The key id is public (drm_content_id) and is in the table.
      expect(blobs[0]!.includes(Buffer.from(a.keyId))).toBe(true);
    }

    // Served once, so the licence path is in the logs too: still no key.
    const served = await json(await licence(t.service.videos.drm.tokens.mint(a.id).url, { kids: [b64url(a.keyId)], type: "temporary" }));
    expect(served.body.keys).toHaveLength(1);
    const log = lines.join("\n");
    expect(log).toContain("DRM licence served");
    for (const k of [a.key, b.key]) for (const form of [k, k.toUpperCase(), b64url(k)]) expect(log).not.toContain(form);
  });

  test("a sealed key does not open for another video's row", async () => {
    const a = await drmVideo();
    const b = await drmVideo();
    await t.service.database.client.execute({ sql: "UPDATE drm_keys SET sealed_key = (SELECT sealed_key FROM drm_keys WHERE video_id = ?) WHERE video_id = ?", args: [a.id, b.id] });
    await expect(t.service.videos.drm.keys.find(b.id)).rejects.toThrow();
    expect((await t.service.videos.drm.keys.find(a.id))!.key).toBe(a.key);
  });
});

describe("the ClearKey licence endpoint", () => {
  test("a good token gets a JWK set with this video's key among the requested kids only, CORS open", async () => {
    const a = await drmVideo();
    const b = await drmVideo();
    const url = t.service.videos.drm.tokens.mint(a.id).url;
    const r = await json(
      await licence(
        url,
        { kids: [b64url(b.keyId), b64url(a.keyId), b64url("00".repeat(16))], type: "temporary" },
        { headers: { "content-type": "application/json", origin: "https://player.example" } },
      ),
    );
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.body).toEqual({ keys: [{ kty: "oct", kid: b64url(a.keyId), k: b64url(a.key) }], type: "temporary" });
    expect(Buffer.from(r.body.keys[0].k, "base64url").toString("hex")).toBe(a.key);
    // Asking only for another video's kid with this video's token: nothing.
    expect((await json(await licence(url, { kids: [b64url(b.keyId)] }))).body).toEqual({ keys: [], type: "temporary" });
    // Players may send the body as text/plain or octets: it is read as JSON whatever the type.
    expect((await json(await licence(url, JSON.stringify({ kids: [b64url(a.keyId)] }), { headers: { "content-type": "application/octet-stream" } }))).body.keys).toHaveLength(1);
  });

  test("missing, malformed, expired or another video's token: 403 PERMISSION_DENIED in the envelope, with CORS", async () => {
    const a = await drmVideo();
    const b = await drmVideo();
    const body = { kids: [b64url(a.keyId)], type: "temporary" };
    const good = t.service.videos.drm.tokens.mint(a.id).token;
    const expired = createDrmTokens({ secret: t.service.secret, baseUrl: () => t.base, ttlMs: 1000 }).mint(a.id, Date.now() - 10_000).token;
    const cases: Array<[string, string | undefined, string]> = [
      ["missing", undefined, "required"],
      ["empty", "", "required"],
      ["malformed", "not-a-token", "not valid"],
      ["other video's", t.service.videos.drm.tokens.mint(b.id).token, "not valid"],
      ["tampered expiry", `${Number(good.split(".")[0]) + 1}.${good.split(".")[1]}`, "not valid"],
      ["expired", expired, "expired"],
    ];
    for (const [name, token, message] of cases) {
      const r = await json(await licence(licenceUrl(a.id, token), body));
      expect([name, r.status, r.body.success, r.body.error.code, r.body.error.details]).toEqual([name, 403, false, "PERMISSION_DENIED", ["drm.token"]]);
      expect(r.body.message).toContain(message);
      expect(r.headers.get("access-control-allow-origin")).toBe("*");
    }
    // A deleted video answers no key, whatever the token.
    expect((await t.api(`/videos/${a.id}/`, { method: "DELETE" })).status).toBe(200);
    expect((await json(await licence(licenceUrl(a.id, good), body))).body).toEqual({ keys: [], type: "temporary" });
  });

  test("a body that is not a licence request is 422 VALIDATION_ERROR naming the field", async () => {
    const a = await drmVideo();
    const url = t.service.videos.drm.tokens.mint(a.id).url;
    const cases: Array<[unknown, string]> = [
      ["{not json", "body"],
      ["", "body"],
      [[1, 2], "body"],
      [{}, "kids"],
      [{ kids: [] }, "kids"],
      [{ kids: ["short"] }, "kids"],
      [{ kids: [`${b64url(a.keyId)}==`] }, "kids"],
      [{ kids: [b64url(a.keyId)], type: "persistent-license" }, "type"],
    ];
    for (const [body, field] of cases) {
      const r = await json(await licence(url, body));
      expect([JSON.stringify(body), r.status, r.body.error.code, Object.keys(r.body.error.details)]).toEqual([JSON.stringify(body), 422, "VALIDATION_ERROR", [field]]);
      expect(r.headers.get("access-control-allow-origin")).toBe("*");
    }
    const big = await json(await licence(url, { kids: [b64url(a.keyId)], pad: "x".repeat(20_000) }));
    // Over 16 KiB: 413 PAYLOAD_TOO_LARGE, counted while read (issue 23).
    expect([big.status, big.body.error.code, Object.keys(big.body.error.details)]).toEqual([413, "PAYLOAD_TOO_LARGE", ["body"]]);
  });

  test("OPTIONS preflight answers 204 with the CORS headers a player needs", async () => {
    const a = await drmVideo();
    const res = await fetch(licenceUrl(a.id, "x"), {
      method: "OPTIONS",
      headers: { origin: "https://player.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
    expect(res.headers.get("access-control-allow-headers")).toContain("content-type");
  });

  test("documented in OpenAPI with its request and answer shapes", async () => {
    // Untyped on purpose: the OpenAPI document itself (not an API answer), walked by path and key; the test asserts each step it reads.
    const doc = (await (await fetch(`${t.base}/openapi/json`)).json()) as any;
    const op = doc.paths["/drm/clearkey/{videoId}/license"].post;
    expect(op.security).toEqual([]);
    expect(op.requestBody.content["application/json"].schema.required).toEqual(["kids"]);
    expect(Object.keys(op.responses).sort()).toEqual(["200", "403", "413", "422", "429", "500"]);
    expect(doc.paths["/api/public/v1/videos/{id}/drm-token/"].post.summary).toBeTruthy();
  });
});

describe("POST /videos/{id}/drm-token/", () => {
  test("mints a fresh licence URL for a DRM video; another organization's id is 404; a video without DRM is 409", async () => {
    const a = await drmVideo();
    const r = await json(await t.api(`/videos/${a.id}/drm-token/`, { method: "POST" }));
    expect(r.status).toBe(200);
    expect(r.body.data.drm_license_url).toStartWith(`${t.base}/drm/clearkey/${a.id}/license?token=`);
    const ttl = Date.parse(r.body.data.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(23 * 3_600_000);
    expect(ttl).toBeLessThanOrEqual(24 * 3_600_000 + 1000);
    const served = await json(await licence(r.body.data.drm_license_url, { kids: [b64url(a.keyId)] }));
    expect(served.body.keys[0].k).toBe(b64url(a.key));

    // Another organization: as for a missing id.
    const theirs = await json(await t.api(`/videos/${a.id}/drm-token/`, { method: "POST", key: otherOrg.apiKey }));
    expect([theirs.status, theirs.body.error.code]).toEqual([404, "NOT_FOUND"]);
    const missing = await json(await t.api("/videos/vid_nothere/drm-token/", { method: "POST" }));
    expect([missing.status, missing.body.error.code]).toEqual([404, "NOT_FOUND"]);

    const plain = await json(await t.api("/videos/", { method: "POST", json: { source_url: files.url("missing-plain.mp4") } }));
    const refused = await json(await t.api(`/videos/${plain.body.data.asset.public_id}/drm-token/`, { method: "POST" }));
    expect([refused.status, refused.body.error.code, refused.body.error.details]).toEqual([409, "DRM_NOT_AVAILABLE", { drm_enabled: "was not set on this video" }]);
    // Their own DRM video: minted with their key.
    const own = await drmVideo(otherOrg.apiKey);
    expect((await t.api(`/videos/${own.id}/drm-token/`, { method: "POST", key: otherOrg.apiKey })).status).toBe(200);
  });

  test("the failed videos' events carry no key (only DRM fields of the payload shape)", async () => {
    const a = await drmVideo();
    await waitFor(async () => (await json(await t.api(`/videos/${a.id}/`))).body.data.video.status === "ERROR", { timeoutMs: 20_000, what: "failed fetch" });
    const events = JSON.stringify(await outboxEvents(t.service, a.id));
    expect(events).toContain('"drm":true');
    expect(events).not.toContain(a.key);
    expect(events).not.toContain(b64url(a.key));
  });
});

// Last: it spends this address's allowance for the minute.
describe("rate limits", () => {
  test("the licence route answers 429 RATE_LIMITED with Retry-After and CORS past the per-address limit", async () => {
    const a = await drmVideo();
    const url = t.service.videos.drm.tokens.mint(a.id).url;
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i <= DRM_LICENCE_LIMITS.perAddress; i++) {
      last = await licence(i % 2 ? url : licenceUrl(a.id, "bad"), { kids: [b64url(a.keyId)] });
      statuses.push(last.status);
      if (last.status === 429) break;
    }
    // Earlier tests of this file spent part of the allowance: refused sooner, never later.
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((s) => s === 200 || s === 403)).toBe(true);
    const body = await failed(last!);
    expect(body.error.code).toBe("RATE_LIMITED");
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(last!.headers.get("access-control-allow-origin")).toBe("*");
  });
});
