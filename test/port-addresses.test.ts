/**
 * A service on a port other than 8080, as a new user runs it (issue 23,
 * item 10): `npm start` with PORT and BASE_URL in one terminal, then the
 * demo and the CLI from another terminal in the same folder whose
 * environment names no address. Every address they print or use is the
 * service's, never :8080; VIDLIVE_API_URL works with or without the
 * `/api/public/v1` suffix; `rtmp_url` takes its host from BASE_URL.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ok } from "./support/api.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

const ROOT = join(import.meta.dir, "..");
const LINKED = ["package.json", "node_modules", "src", "machines", "media", "scripts", "fixtures", "bunfig.toml", "tsconfig.json", "packages"];

const freePort = () => {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = probe.port as number;
  probe.stop(true);
  return port;
};

const work = mkdtempSync(join(tmpdir(), "port-addresses-"));
for (const entry of LINKED) if (existsSync(join(ROOT, entry))) symlinkSync(join(ROOT, entry), join(work, entry));
const port = freePort();
const rtmpPort = freePort();
// Not "localhost": a host that only BASE_URL can have told them.
const base = `http://127.0.0.1:${port}`;

// The second terminal: nothing of the runner's service settings, no address at all.
const terminal: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) {
  if (v === undefined || /^(DATA_DIR|DATABASE_|SECRET_KEY|STORAGE|S3_|AWS_|BASE_URL|ALLOW_PRIVATE_NETWORK|VIDLIVE_|PORT|RTMP_|HOST)/.test(k)) continue;
  terminal[k] = v;
}

let proc: Bun.Subprocess<"ignore", "pipe", "pipe"> | undefined;
let banner = "";
let apiKey = "";

beforeAll(async () => {
  proc = Bun.spawn(["setsid", "npm", "start"], {
    cwd: work,
    env: { ...terminal, PORT: String(port), RTMP_PORT: String(rtmpPort), BASE_URL: base, LOG_LEVEL: "warn" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  void (async () => {
    for await (const chunk of proc!.stderr) banner += new TextDecoder().decode(chunk);
  })();
  void new Response(proc.stdout).text();
  const deadline = Date.now() + 120_000;
  while (!banner.includes("API: ")) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${banner}`);
    await Bun.sleep(100);
  }
  apiKey = /API key \(shown once\): (sk_live_\S+)/.exec(banner)?.[1] ?? "";
}, 150_000);

afterAll(async () => {
  if (proc) {
    try {
      process.kill(-proc.pid, "SIGTERM");
    } catch {}
    await proc.exited;
  }
  rmSync(work, { recursive: true, force: true });
});

/** A command typed in the second terminal, in the service's folder. */
async function typed(cmd: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn(cmd, { cwd: work, env: { ...terminal, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code };
}

test("the start banner names the service's own address, and the next step points the demo at it", () => {
  expect(apiKey).toStartWith("sk_live_");
  expect(banner).toContain(`API: ${base}/api/public/v1/`);
  expect(banner).toContain(`export VIDLIVE_API_URL=${base}`);
  expect(banner).not.toContain(":8080");
});

test("npm run demo finds the service with no address given, and takes VIDLIVE_API_URL with the /api/public/v1 suffix", async () => {
  // A wrong key: the demo stops at the service's refusal, which proves it reached the service (not localhost:8080).
  const found = await typed(["npm", "run", "-s", "demo"], { VIDLIVE_API_KEY: "sk_live_wrong_key" });
  expect(found.err).not.toContain("Cannot reach");
  expect(found.err).toContain("refused the API key");
  const suffixed = await typed(["npm", "run", "-s", "demo"], { VIDLIVE_API_KEY: "sk_live_wrong_key", VIDLIVE_API_URL: `${base}/api/public/v1/` });
  expect(suffixed.err).toContain("refused the API key");
}, 120_000);

test("cli trigger (as cli listen) reaches the service with no address given, and with VIDLIVE_API_URL ending in /api/public/v1", async () => {
  const plain = await typed(["npm", "run", "-s", "cli", "--", "trigger", "VIDEO_UPLOADED", "--json"], { VIDLIVE_API_KEY: apiKey });
  expect(plain.err).toBe("");
  expect(plain.code).toBe(0);
  expect(JSON.parse(plain.out).event).toBe("VIDEO_UPLOADED");
  for (const url of [`${base}/api/public/v1`, `${base}/api/public/v1/`, `${base}/`]) {
    const r = await typed(["npm", "run", "-s", "cli", "--", "trigger", "VIDEO_UPLOADED"], { VIDLIVE_API_KEY: apiKey, VIDLIVE_API_URL: url });
    expect(`${url}: ${r.out}${r.err}`).toStartWith(`${url}: Triggered VIDEO_UPLOADED`);
  }
}, 120_000);

test("cli org create's owner setup link is the service's address, and opens", async () => {
  const r = await typed(["npm", "run", "-s", "cli", "--", "org", "create", "--name", "Acme", "--owner-email", "owner@port-addresses.test", "--json"]);
  expect(r.err).toBe("");
  const link = JSON.parse(r.out).owner_setup_url as string;
  expect(link).toStartWith(`${base}/settings/setup/`);
  const page = await fetch(link);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('type="password"');
}, 120_000);

test("rtmp_url takes its host from BASE_URL (no RTMP_HOST set)", async () => {
  const res = await fetch(`${base}/api/public/v1/livestreams/`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ title: "Port" }),
  });
  expect(res.status).toBe(201);
  const stream = (await ok(res, "createLivestream")).data.stream;
  expect(stream.rtmp_url).toStartWith(`rtmp://127.0.0.1:${rtmpPort}/live/`);
  expect(stream.hls_url).toStartWith(`${base}/`);
}, 120_000);
