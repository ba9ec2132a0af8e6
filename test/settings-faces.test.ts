/**
 * Faces only face (issue 25 item 4), as an owner and an operator can check:
 * the settings screen runs no inline script (every script is a file served
 * by the screen), the configuration is
 * frozen once the service is built while its public address names the real
 * bound ports, and the screen, the CLI and the domains do not reach into each
 * other (people in src/people, organization settings changes in src/orgs).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { peopleFor } from "../src/settings/session-guard.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

let t: TestService;
let cookie: string;
beforeAll(async () => {
  t = await startTestService();
  const people = peopleFor(t.service.database);
  const { token } = await people.createOwner(t.orgId, "faces@example.com");
  const who = await people.completeSetup(token, "a long enough password");
  if (!who || who === "join") throw new Error("setup failed");
  cookie = `vidlive_session=${(await people.createSession(who.userId, who.orgId)).token}`;
});
afterAll(() => t.stop());

const page = (path: string) => fetch(`${t.base}${path}`, { headers: { cookie }, redirect: "manual" });

describe("the settings screen's scripts are files", () => {
  for (const path of ["/settings/login", "/settings/videos", "/settings/live", "/settings/organization"]) {
    test(`${path}: every <script> is empty and has a src this service serves as JavaScript`, async () => {
      const res = await page(path);
      expect(res.status).toBe(200);
      const body = await res.text();
      const tags = [...body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
      expect(tags.length).toBeGreaterThan(0);
      for (const [, attrs, inner] of tags) {
        expect(inner!.trim()).toBe("");
        const src = /\bsrc="([^"]+)"/.exec(attrs!)?.[1];
        expect(src).toStartWith("/");
        const asset = await fetch(`${t.base}${src}`);
        expect(asset.status).toBe(200);
        expect(asset.headers.get("content-type")).toContain("javascript");
      }
    });
  }

  test("the videos section's upload form loads its own script; only the screen's asset files are served", async () => {
    const body = await (await page("/settings/videos")).text();
    expect(body).toContain('src="/settings/assets/videos-upload.js"');
    expect((await fetch(`${t.base}/settings/assets/deps.ts`)).status).toBe(404);
    expect((await fetch(`${t.base}/settings/assets/videos-list.js`)).status).toBe(200);
  });
});

describe("configuration", () => {
  test("frozen once the service is built; the public address names the bound ports", () => {
    const config = t.service.config as { baseUrl: string; rtmpPort: number; liveSlots: number };
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      config.baseUrl = "http://elsewhere.example";
    }).toThrow();
    expect(() => {
      config.liveSlots = 1;
    }).toThrow();
    // PORT=0 and RTMP_PORT=0: the real ports, from the listeners, never written into the configuration.
    expect(t.service.address.baseUrl).toBe(t.base);
    expect(config.baseUrl).toBe(t.base);
    expect(t.service.address.rtmpPort).toBe(t.service.live.rtmp!.port);
    expect(t.service.address.rtmpPort).toBeGreaterThan(0);
  });
});

describe("faces only face: imports", () => {
  const ROOT = join(import.meta.dir, "..", "src");
  const importsOf = (dir: string) =>
    readdirSync(join(ROOT, dir), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".ts"))
      .flatMap((f) => [...readFileSync(join(ROOT, dir, f), "utf8").matchAll(/from "([^"]+)"/g)].map((m) => ({ file: `${dir}/${f}`, spec: m[1]! })));

  test("the settings screen imports no service.ts and no cli/; the CLI no settings/", () => {
    expect(importsOf("settings").filter((i) => /service\.ts$|\/cli\//.test(i.spec))).toEqual([]);
    expect(importsOf("cli").filter((i) => /\/settings\//.test(i.spec))).toEqual([]);
  });

  test("people and organizations import neither face (settings, cli, http routes)", () => {
    for (const dir of ["people", "orgs"]) expect(importsOf(dir).filter((i) => /\/(settings|cli)\//.test(i.spec))).toEqual([]);
  });

  test("no inline script left in the screen's views", () => {
    const inline = readdirSync(join(ROOT, "settings")).filter((f) => f.endsWith(".ts") && /<script>/.test(readFileSync(join(ROOT, "settings", f), "utf8")));
    expect(inline).toEqual([]);
  });
});
