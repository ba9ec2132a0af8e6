import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { join } from "node:path";
import { apiKeys } from "../src/db/schema/index.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

const CLI = join(import.meta.dir, "../src/cli/main.ts");
let t: TestService;

beforeAll(async () => {
  t = await startTestService();
});
afterAll(() => t.stop());

/** The operator CLI as an operator runs it: another process, the same DATA_DIR and database (a file, or the sqld under VIDLIVE_TEST_DATABASE), while the service runs. */
async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn(["bun", CLI, ...args], { env: { ...process.env, DATA_DIR: t.dataDir, DATABASE_URL: t.service.config.databaseUrl }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

const status = async (key: string) => (await t.api("/organization/", { key })).status;
const prefixOf = (key: string) => key.split("_")[2]!;
const secretOf = (key: string) => key.split("_")[3]!;

async function expireKey(key: string) {
  await t.service.database.write((tx) =>
    tx
      .update(apiKeys)
      .set({ expiresAt: Date.now() - 1000 })
      .where(eq(apiKeys.prefix, prefixOf(key))),
  );
}

describe("key lifecycle through the CLI", () => {
  test("an expired key is not live: key create works when the only key is expired; the new key authenticates, the old one stays 401", async () => {
    const created = await cli("org", "create", "--name", "expiring", "--json");
    expect(created.code).toBe(0);
    const { org_id: orgId, api_key: oldKey } = JSON.parse(created.out);
    expect(await status(oldKey)).toBe(200);
    // While it is live a second key is refused.
    const refused = await cli("key", "create", "--org", orgId);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("API_KEY_EXISTS");

    await expireKey(oldKey);
    expect(await status(oldKey)).toBe(401);
    const next = await cli("key", "create", "--org", orgId, "--name", "ci", "--json");
    expect({ code: next.code, err: next.err }).toEqual({ code: 0, err: "" });
    const newKey = JSON.parse(next.out).api_key;
    expect(newKey).toMatch(/^sk_live_/);
    expect(await status(newKey)).toBe(200);
    expect(await status(oldKey)).toBe(401);
    // And the new one is the single live key again.
    expect((await cli("key", "create", "--org", orgId)).err).toContain("API_KEY_EXISTS");

    const shown = await cli("key", "show", "--org", orgId, "--json");
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.out)).toEqual({
      org_id: orgId,
      keys: [
        { prefix: prefixOf(newKey), name: "ci", status: "live", created_at: expect.any(String), expires_at: null, revoked_at: null },
        { prefix: prefixOf(oldKey), name: "default", status: "expired", created_at: expect.any(String), expires_at: expect.any(String), revoked_at: expect.any(String) },
      ],
    });
  });

  test("key show and org show give the prefix again, never the secret", async () => {
    const { org_id: orgId, api_key: key } = JSON.parse((await cli("org", "create", "--name", "shown", "--json")).out);
    const text = await cli("key", "show", "--org", orgId);
    expect(text.code).toBe(0);
    expect(text.out).toContain(`sk_live_${prefixOf(key)}_`);
    expect(text.out).toContain("live");
    const org = await cli("org", "show", "--org", orgId);
    expect(org.code).toBe(0);
    const shown = JSON.parse(org.out);
    expect(shown).toMatchObject({ org_id: orgId, name: "shown", api_key: { prefix: prefixOf(key), name: "default", created_at: expect.any(String), expires_at: null }, settings: expect.any(Object) });
    for (const out of [text.out, org.out]) {
      expect(out).not.toContain(secretOf(key));
      expect(out).not.toContain(new Bun.CryptoHasher("sha256").update(secretOf(key)).digest("hex"));
    }

    // After a revoke: org show has no live key, key show says revoked.
    expect((await cli("key", "revoke", "--org", orgId)).out.trim()).toBe("revoked");
    expect(JSON.parse((await cli("org", "show", "--org", orgId)).out).api_key).toBeNull();
    expect(JSON.parse((await cli("key", "show", "--org", orgId, "--json")).out).keys).toMatchObject([{ prefix: prefixOf(key), status: "revoked" }]);
    expect((await cli("key", "revoke", "--org", orgId)).out.trim()).toBe("no live key");
  });

  test("key create --expires-at sets an expiry (shown by key show); a past time is refused", async () => {
    const { org_id: orgId } = JSON.parse((await cli("org", "create", "--name", "dated", "--json")).out);
    expect((await cli("key", "revoke", "--org", orgId)).code).toBe(0);
    const past = await cli("key", "create", "--org", orgId, "--expires-at", "2001-01-01T00:00:00Z");
    expect(past.code).toBe(1);
    expect(past.err).toContain("--expires-at");
    const at = "2099-06-01T00:00:00.000Z";
    const made = await cli("key", "create", "--org", orgId, "--expires-at", at, "--json");
    expect(made.code).toBe(0);
    const key = JSON.parse(made.out).api_key;
    expect(await status(key)).toBe(200);
    expect(JSON.parse((await cli("key", "show", "--org", orgId, "--json")).out).keys[0]).toMatchObject({ prefix: prefixOf(key), status: "live", expires_at: at });
  });

  test("an unknown organization is NOT_FOUND with a non-zero exit", async () => {
    const r = await cli("key", "show", "--org", "org_nope");
    expect(r.code).toBe(1);
    expect(r.err).toContain("NOT_FOUND");
  });
});

describe("org set --playback-policy (issue 27)", () => {
  test("signed: GET /organization/ shows it and a stream created without a policy is signed; public again after", async () => {
    const set = await cli("org", "set", "--org", t.orgId, "--playback-policy", "signed");
    expect({ code: set.code, err: set.err }).toEqual({ code: 0, err: "" });
    expect(JSON.parse(set.out).settings.playback).toEqual({ policy: "signed" });
    const org = await ok(t.api("/organization/"), "getOrganization");
    expect(org.data.organization.playback.policy).toBe("signed");
    const stream = await ok(t.api("/livestreams/", { method: "POST", json: { title: "default signed" } }), "createLivestream");
    expect(stream.data.stream.playback_policy).toBe("signed");
    expect((await fetch(stream.data.stream.hls_url)).status).toBe(403);

    expect((await cli("org", "set", "--org", t.orgId, "--playback-policy", "public")).code).toBe(0);
    const after = await ok(t.api("/livestreams/", { method: "POST", json: { title: "default public" } }), "createLivestream");
    expect(after.data.stream.playback_policy).toBe("public");
  });
});
