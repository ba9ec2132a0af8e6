/**
 * The SDK as a user gets it: packages/client packed (`npm pack`, whose
 * prepack script builds dist as `npm run sdk:build` does), installed from the tarball into a fresh project with
 * `npm install --offline` (no registry), then used by Node 20 (`node`, no
 * TypeScript loader) against a running service, on a real signed delivery,
 * and type-checked by tsc in a consumer .ts file (wrong fields must fail).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generate } from "../packages/client/scripts/generate.ts";
import { EVENT_NAMES } from "../src/webhooks/event-names.ts";
import { signatureHeader } from "../src/webhooks/sign.ts";
import { checkWebhook } from "../src/webhooks/verify-webhook.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { WEBHOOK_ENV } from "./support/webhook-fixture.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

const ROOT = join(import.meta.dir, "..");
const PKG = join(ROOT, "packages/client");
const work = mkdtempSync(join(tmpdir(), "sdk-package-"));
const consumer = join(work, "consumer");
let t: TestService;
let receiver: WebhookReceiver;

function run(cmd: string[], cwd: string, env: Record<string, string> = {}) {
  const p = Bun.spawnSync(cmd, { cwd, env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false", ...env } });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

/** Runs a script of packages/client/test with Node from the consumer project, so `@vidlive/client` resolves to the installed tarball only. */
async function node(script: string, args: string[]) {
  cpSync(join(PKG, "test", script), join(consumer, script));
  // Asynchronously: the service answering the script runs in this process.
  const p = Bun.spawn(["node", script, ...args], { cwd: consumer, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect(err).toBe("");
  expect(code).toBe(0);
  return JSON.parse(out);
}

let packLog = "";
beforeAll(async () => {
  // `npm pack` alone: its prepack script builds dist (gitignored), so a pack from a fresh checkout ships a working package.
  rmSync(join(PKG, "dist"), { recursive: true, force: true });
  const pack = run(["npm", "pack", "--pack-destination", work], PKG);
  if (pack.code !== 0) throw new Error(`npm pack failed: ${pack.err}`);
  packLog = pack.out + pack.err;
  mkdirSync(consumer);
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"))!;
  const install = run(["npm", "install", "--offline", "--no-package-lock", join(work, tarball)], consumer);
  if (install.code !== 0) throw new Error(`npm install --offline failed: ${install.err}`);
  receiver = startWebhookReceiver();
  t = await startTestService({ env: WEBHOOK_ENV });
}, 120_000);

afterAll(async () => {
  receiver?.stop();
  await t?.stop({ cleanup: true });
  rmSync(work, { recursive: true, force: true });
});

describe("@vidlive/client, packed and installed", () => {
  test("npm pack ran the prepack build (dist was removed first)", () => {
    expect(packLog).toContain("prepack");
    expect(packLog).toContain(`built ${join(PKG, "dist")}`);
  });

  test("the tarball holds JavaScript and declarations only, and no dependencies", () => {
    const manifest = JSON.parse(readFileSync(join(consumer, "node_modules/@vidlive/client/package.json"), "utf8"));
    expect(manifest.dependencies).toBeUndefined();
    const files = readdirSync(join(consumer, "node_modules/@vidlive/client/dist"));
    expect(files).toContain("index.js");
    expect(files).toContain("index.d.ts");
    expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
    expect(readdirSync(join(consumer, "node_modules")).filter((f) => !f.startsWith("."))).toEqual(["@vidlive"]);
  });

  test("Node imports it and calls the service: organization, videos, a new stream, a 404, a refused key", async () => {
    const out = await node("api.mjs", [t.base, t.apiKey]);
    // The package's engines field says Node >= 20: the Node that ran it must be one.
    expect(Number(/^v(\d+)\./.exec(out.node)?.[1])).toBeGreaterThanOrEqual(20);
    expect(out.events).toBe(EVENT_NAMES.length);
    expect(out.org).toBe(t.orgId);
    expect(out.videos).toBe(0);
    expect(out.stream.status).toBe(201);
    expect(out.stream.body.status).toBe("READY_TO_STREAM");
    expect(out.stream.body.rtmp_url).toStartWith("rtmp://");
    expect(out.missing).toEqual({ status: 404, code: "NOT_FOUND" });
    expect(out.refused).toBe(401);
    // The stream is really there.
    const got = await ok(t.api(`/livestreams/${out.stream.body.id}/`), "getLivestream");
    expect(got.data.stream.title).toBe("From Node");
  }, 120_000);

  test("verifyWebhook accepts a real delivery signed by the service, and agrees with the service's checker on every case", async () => {
    const created = await ok(t.api("/webhooks/", { method: "POST", json: { url: receiver.url, events: ["LIVESTREAM_SCHEDULED"] } }), "createWebhook");
    const secret = created.data.signing_secret as string;
    expect((await t.api("/livestreams/", { method: "POST", json: { title: "Signed" } })).status).toBe(201);
    const [delivery] = await receiver.waitFor(1, 10_000);
    const now = Math.floor(Date.now() / 1000);
    const body = '{"event":"VIDEO_UPLOADED","created_at":"2030-01-01T00:00:00.000Z","data":{}}';
    const good = signatureHeader("whsec", body, now);
    const cases = [
      { body, header: good, secret: "whsec", now },
      { body: `${body} `, header: good, secret: "whsec", now },
      { body, header: good, secret: "other", now },
      { body, header: good, secret: "whsec", now: now + 301 },
      { body, header: good, secret: "whsec", now: now - 301 },
      { body, header: good.toUpperCase(), secret: "whsec", now },
      { body, header: `t=${now},v1=00,${good.split(",")[1]}`, secret: "whsec", now },
      { body, header: `t=abc,${good.split(",")[1]}`, secret: "whsec", now },
      { body, header: `t=${now}`, secret: "whsec", now },
      { body, header: "", secret: "whsec", now },
      { body, header: ` t = ${now} , v1 = ${good.split("v1=")[1]} `, secret: "whsec", now },
    ];
    const input = join(work, "verify.json");
    writeFileSync(input, JSON.stringify({ real: { body: delivery!.body, headers: Object.fromEntries(delivery!.headers), secret }, cases }));
    const out = await node("verify.mjs", [input]);
    expect([out.valid, out.validFromNodeHeaders, out.tampered, out.wrongSecret]).toEqual([true, true, false, false]);
    expect(out.positional).toEqual(["TypeError", "TypeError"]);
    expect(out.parsed.event).toBe("LIVESTREAM_SCHEDULED");
    expect(out.parsed.data.stream.title).toBe("Signed");
    const service = cases.map((c) => {
      const r = checkWebhook({ body: c.body, headers: c.header, secret: c.secret, nowSeconds: c.now });
      return r.valid ? "valid" : r.reason;
    });
    expect(out.cases).toEqual(service);
    expect(service).toEqual(["valid", "mismatch", "mismatch", "expired", "expired", "malformed", "valid", "malformed", "malformed", "missing", "valid"]);
  });

  test("tsc type-checks a consumer against the installed declarations; wrong fields, bodies, paths and event names fail", () => {
    cpSync(join(PKG, "test/consumer.ts"), join(consumer, "consumer.ts"));
    const tsconfig = {
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022", "DOM"], types: [], strict: true, noEmit: true, skipLibCheck: false },
      files: ["consumer.ts"],
    };
    writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify(tsconfig));
    const ok = run([join(ROOT, "node_modules/.bin/tsc"), "-p", "tsconfig.json"], consumer);
    expect(ok.out + ok.err).toBe("");
    expect(ok.code).toBe(0);
    // Without the directives the same file fails on exactly those lines: the negatives are real errors.
    writeFileSync(join(consumer, "consumer.ts"), readFileSync(join(PKG, "test/consumer.ts"), "utf8").replaceAll("// @ts-expect-error", "// expect error"));
    const bad = run([join(ROOT, "node_modules/.bin/tsc"), "-p", "tsconfig.json"], consumer);
    expect(bad.code).not.toBe(0);
    const expected = readFileSync(join(PKG, "test/consumer.ts"), "utf8")
      .split("\n")
      .filter((l) => l.includes("@ts-expect-error")).length;
    expect(new Set([...bad.out.matchAll(/consumer\.ts\((\d+),/g)].map((m) => m[1])).size).toBe(expected);
  }, 240_000);

  test("the committed schema.d.ts and openapi.json are what `npm run sdk:generate` makes from the service now", async () => {
    const out = join(work, "generated");
    mkdirSync(join(out, "src"), { recursive: true });
    await generate(out);
    const stale = ["openapi.json", "src/schema.d.ts"].filter((f) => readFileSync(join(out, f), "utf8") !== readFileSync(join(PKG, f), "utf8"));
    expect(stale, "run `npm run sdk:generate` and commit the result").toEqual([]);
  }, 180_000);
});
