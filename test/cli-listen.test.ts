import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Subprocess } from "bun";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkWebhook } from "../src/webhooks/verify-webhook.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * `cli listen` / `cli trigger` (issue 16 point 3) end to end: a real service on
 * a real port, the CLI as a user runs it (a child process talking HTTP with
 * the organization's key), and a local plain-http receiver.
 */
const CLI = join(import.meta.dir, "../src/cli/main.ts");

interface Hit {
  path: string;
  event: string;
  delivery: string;
  signature: string;
  body: string;
}

function receiver() {
  const hits: Hit[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const h = req.headers;
      hits.push({
        path: new URL(req.url).pathname,
        event: h.get("x-service-event") ?? "",
        delivery: h.get("x-service-delivery") ?? "",
        signature: h.get("x-service-signature") ?? "",
        body: await req.text(),
      });
      return new Response(null, { status: 204 });
    },
  });
  return { hits, url: `http://127.0.0.1:${server.port}/hooks`, stop: () => server.stop(true) };
}

/** `cli listen` as a child; its stdout lines collected; the session secret read from the first one. */
async function listen(base: string, key: string, forwardTo: string, extra: string[] = []) {
  const proc = Bun.spawn(["bun", CLI, "listen", "--forward-to", forwardTo, "--api-url", base, "--api-key", key, ...extra], { stdout: "pipe", stderr: "pipe", env: { ...process.env } });
  const lines: string[] = [];
  const errs: string[] = [];
  const pump = async (s: ReadableStream<Uint8Array>, into: string[]) => {
    let buf = "";
    for await (const c of s) {
      buf += new TextDecoder().decode(c);
      const parts = buf.split("\n");
      buf = parts.pop()!;
      into.push(...parts);
    }
  };
  void pump(proc.stdout, lines);
  void pump(proc.stderr as ReadableStream<Uint8Array>, errs);
  const secret = await waitFor(async () => lines.map((l) => /Signing secret for this session: (whsec_\S+)/.exec(l)?.[1]).find(Boolean), { what: "the session secret", timeoutMs: 20_000 });
  await waitFor(async () => lines.some((l) => l.startsWith("Ready:")), { what: "listen ready", timeoutMs: 20_000 });
  return { proc, lines, errs, secret };
}

async function cli(...args: string[]) {
  const proc = Bun.spawn(["bun", CLI, ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { out, err, code };
}

const procs: Subprocess[] = [];
let t: TestService;
let port: number;
/** The service over real HTTP (stays the same across the restart: same port). */
let base: string;

beforeAll(async () => {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  port = probe.port!;
  probe.stop(true);
  t = await startTestService({ env: { PORT: String(port) } });
  base = t.base;
});
afterAll(async () => {
  for (const p of procs) p.kill();
  await t.stop();
});

describe("cli listen / cli trigger", () => {
  test("trigger and a real action reach the receiver signed under the printed secret; --events filters; other organizations never; a restart resumes without loss", async () => {
    const all = receiver();
    const filtered = receiver();
    try {
      const a = await listen(t.base, t.apiKey, all.url);
      const b = await listen(t.base, t.apiKey, filtered.url, ["--events", "LIVESTREAM_SCHEDULED"]);
      procs.push(a.proc, b.proc);
      expect(a.secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/);
      expect(b.secret).not.toBe(a.secret);

      // (a) cli trigger
      const trig = await cli("trigger", "VIDEO_TRANSCODING_COMPLETED", "--api-url", t.base, "--api-key", t.apiKey, "--json");
      expect(trig.code).toBe(0);
      const triggered = JSON.parse(trig.out);
      // (b) a real action, and another organization's (never forwarded)
      const other = await t.service.orgs.createOrg("other");
      expect((await t.api("/livestreams/", { method: "POST", json: { title: "theirs" }, key: other.apiKey })).status).toBe(201);
      const made = await t.api("/livestreams/", { method: "POST", json: { title: "mine" } });
      expect(made.status).toBe(201);
      const streamId = (await ok(made, "createLivestream")).data.stream.id;

      await waitFor(async () => all.hits.length >= 2 && filtered.hits.length >= 1, { what: "two forwards", timeoutMs: 15_000 });
      expect(all.hits.map((h) => h.event)).toEqual(["VIDEO_TRANSCODING_COMPLETED", "LIVESTREAM_SCHEDULED"]);
      for (const h of all.hits) {
        expect(h.path).toBe("/hooks");
        expect(checkWebhook({ body: h.body, headers: h.signature, secret: a.secret }).valid).toBe(true);
        expect(checkWebhook({ body: h.body, headers: h.signature, secret: b.secret }).valid).toBe(false);
        expect(JSON.parse(h.body).event).toBe(h.event);
      }
      expect(all.hits[0]!.delivery).toBe(triggered.id);
      expect(JSON.parse(all.hits[0]!.body).data.video.status).toBe("COMPLETED");
      expect(JSON.parse(all.hits[1]!.body).data.stream.id).toBe(streamId);
      // The body is the one a registered endpoint gets: the same envelope, keys in the same order.
      expect(Object.keys(JSON.parse(all.hits[1]!.body))).toEqual(["event", "created_at", "data"]);
      // --events: the trigger was dropped, the livestream kept.
      expect(filtered.hits.map((h) => h.event)).toEqual(["LIVESTREAM_SCHEDULED"]);
      expect(checkWebhook({ body: filtered.hits[0]!.body, headers: filtered.hits[0]!.signature, secret: b.secret }).valid).toBe(true);
      // One line per event: event, id, forward status.
      expect(a.lines.some((l) => l.includes("VIDEO_TRANSCODING_COMPLETED") && l.includes(triggered.id) && l.includes("(test)") && l.includes("→ 204"))).toBe(true);

      // The service restarts; events committed before the CLI can reconnect still arrive, once each.
      await t.stop({ cleanup: false });
      const org = { orgId: t.orgId, apiKey: t.apiKey };
      t = await startTestService({ dataDir: t.dataDir, env: { PORT: String(port) }, org, listen: false });
      expect((await t.api("/webhooks/trigger/", { method: "POST", json: { event: "VIDEO_UPLOADED" } })).status).toBe(201);
      expect((await t.api("/livestreams/", { method: "POST", json: { title: "while away" } })).status).toBe(201);
      await t.service.listen();
      // t.api now goes through the app in-process (listen: false); the CLI and the tests below use `base`.
      await waitFor(async () => all.hits.length >= 4 && filtered.hits.length >= 2, { what: "events after the restart", timeoutMs: 20_000 });
      expect(all.hits.map((h) => h.event)).toEqual(["VIDEO_TRANSCODING_COMPLETED", "LIVESTREAM_SCHEDULED", "VIDEO_UPLOADED", "LIVESTREAM_SCHEDULED"]);
      expect(filtered.hits.map((h) => h.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_SCHEDULED"]);
      expect(new Set(all.hits.map((h) => h.delivery)).size).toBe(4);
      expect(a.errs.some((l) => l.startsWith("Reconnected"))).toBe(true);
      // Nothing of the other organization ever arrived.
      expect(all.hits.every((h) => JSON.parse(h.body).data.stream?.title !== "theirs")).toBe(true);
      a.proc.kill();
      b.proc.kill();
    } finally {
      all.stop();
      filtered.stop();
    }
  }, 60_000);

  test("trigger refuses an unknown event (CLI: exit 2; API: 422 VALIDATION_ERROR); listen refuses a bad key", async () => {
    const bad = await cli("trigger", "NOPE", "--api-url", base, "--api-key", t.apiKey);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('unknown event "NOPE"');
    const api = await t.api("/webhooks/trigger/", { method: "POST", json: { event: "NOPE" } });
    expect(api.status).toBe(422);
    expect((await failed(api)).error.code).toBe("VALIDATION_ERROR");
    const refused = await cli("listen", "--forward-to", "http://127.0.0.1:9/hooks", "--api-url", base, "--api-key", "sk_live_nope_nope");
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("INVALID_API_KEY");
  }, 120_000);

  test("at most 5 listeners per organization", async () => {
    // An organization of its own: the other tests' listeners do not count against it.
    const { apiKey } = await t.service.orgs.createOrg("listeners");
    const get = () => fetch(`${base}/api/public/v1/webhooks/listen/`, { headers: { authorization: `Bearer ${apiKey}` } });
    const open: Response[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const r = await get();
        expect(r.status).toBe(200);
        open.push(r);
      }
      const sixth = await get();
      expect(sixth.status).toBe(429);
      expect((await failed(sixth)).error.code).toBe("RATE_LIMITED");
    } finally {
      for (const r of open) await r.body?.cancel();
    }
  }, 120_000);

  test("the README's receiver, run as written, gets the events `cli listen` forwards", async () => {
    const readme = readFileSync(join(import.meta.dir, "../README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Receiving webhooks"));
    const code = /```ts\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf("\n## ", 5)))![1]!;
    const dir = join(import.meta.dir, "../.tmp");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `cli-listen-receiver-${process.pid}.ts`);
    writeFileSync(file, code);
    const probe = Bun.serve({ port: 0, fetch: () => new Response() });
    const receiverPort = probe.port!;
    probe.stop(true);
    const l = await listen(base, t.apiKey, `http://localhost:${receiverPort}/hooks`);
    procs.push(l.proc);
    const child = Bun.spawn([process.execPath, file], { env: { ...process.env, WEBHOOK_SECRET: l.secret, PORT: String(receiverPort) }, stdout: "pipe", stderr: "inherit" });
    let out = "";
    void (async () => {
      for await (const c of child.stdout) out += new TextDecoder().decode(c);
    })();
    try {
      await waitFor(async () => (await fetch(`http://localhost:${receiverPort}/`).catch(() => null)) !== null, { what: "the README receiver" });
      const trig = await cli("trigger", "VIDEO_TRANSCODING_COMPLETED", "--api-url", base, "--api-key", t.apiKey);
      expect(trig.code).toBe(0);
      await waitFor(async () => /VIDEO_TRANSCODING_COMPLETED vid_\S+/.test(out), { what: "the receiver's line", timeoutMs: 15_000 });
      // The CLI prints its line once the receiver has answered.
      await waitFor(async () => l.lines.some((x) => x.includes("VIDEO_TRANSCODING_COMPLETED") && x.includes("→ 204")), { what: "the forward line", timeoutMs: 15_000 });
    } finally {
      child.kill();
      l.proc.kill();
      await child.exited;
      rmSync(file, { force: true });
    }
  }, 120_000);
});
