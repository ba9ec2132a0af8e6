/**
 * The README, run as a new user would paste it. Convention: a fenced block
 * directly under a line `<!-- readme-test: NAME -->` is run for real, in the
 * README's order, in one simulated terminal (variables and functions a block
 * defines are there for the next ones), against a fresh service started with
 * `npm start` in a temp folder. The only substitutions: the service's port in
 * `http://localhost:8080`, the key in `export VIDLIVE_API_KEY=sk_live_…`, and
 * the local file server's port 8000 (free ports, so parallel runs never
 * collide). Each NAME has its check below: what the user would see.
 *
 * The temp folder links the repository's code (package.json, node_modules,
 * src, …) so `./data`, `backups/` and `fixtures/` resolve as they do for a
 * user, without writing into the repository.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

setDefaultTimeout(120_000);

const ROOT = join(import.meta.dir, "..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const LINKED = ["package.json", "node_modules", "src", "machines", "media", "scripts", "fixtures", "bunfig.toml", "tsconfig.json", "packages"];

interface Block {
  name: string;
  lang: string;
  code: string;
}

/** The README's marked blocks, in order. */
export function markedBlocks(markdown: string): Block[] {
  const re = /<!-- readme-test: ([\w-]+) -->\n```(\w*)\n([\s\S]*?)\n```/g;
  return [...markdown.matchAll(re)].map((m) => ({ name: m[1]!, lang: m[2]!, code: m[3]! }));
}

const freePort = () => {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = probe.port;
  probe.stop(true);
  return port as number;
};

const work = mkdtempSync(join(tmpdir(), "readme-"));
for (const entry of LINKED) if (existsSync(join(ROOT, entry))) symlinkSync(join(ROOT, entry), join(work, entry));
const port = freePort();
const rtmpPort = freePort();
const filePort = freePort();
const base = `http://localhost:${port}`;

// A clean environment: nothing of the test runner's service settings leaks into `npm start`.
const cleanEnv: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) {
  if (v === undefined || /^(DATA_DIR|DATABASE_|SECRET_KEY|STORAGE|S3_|AWS_|BASE_URL|ALLOW_PRIVATE_NETWORK|VIDLIVE_|PORT|RTMP_|HOST)/.test(k)) continue;
  cleanEnv[k] = v;
}

// ---- the service, as `npm start` runs it ----

let service: { proc: Bun.Subprocess<"ignore", "pipe", "pipe">; stderr: () => string; stdout: () => string } | undefined;

async function startService(extraEnv: Record<string, string> = {}) {
  // setsid: npm, its shell and bun form one process group, stopped together.
  const proc = Bun.spawn(["setsid", "npm", "start"], {
    cwd: work,
    env: { ...cleanEnv, PORT: String(port), RTMP_PORT: String(rtmpPort), LOG_LEVEL: "warn", ...extraEnv },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const text = { stdout: "", stderr: "" };
  for (const name of ["stdout", "stderr"] as const) {
    void (async () => {
      for await (const chunk of proc[name]) text[name] += new TextDecoder().decode(chunk);
    })();
  }
  const deadline = Date.now() + 60_000;
  while (!text.stderr.includes("API: ")) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${text.stderr}\n${text.stdout}`);
    await Bun.sleep(50);
  }
  service = { proc, stderr: () => text.stderr, stdout: () => text.stdout };
  return service;
}

async function stopService() {
  if (!service) return;
  const { proc } = service;
  service = undefined;
  try {
    process.kill(-proc.pid, "SIGTERM");
  } catch {}
  const timer = setTimeout(() => {
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {}
  }, 10_000);
  await proc.exited;
  clearTimeout(timer);
}

// ---- the terminal: one bash per block, its variables and functions carried to the next ----

const STATE = join(work, ".readme-shell-state");
const BASELINE = join(work, ".readme-shell-baseline");
const wrap = (code: string) =>
  [
    `[ -f "${STATE}" ] && . "${STATE}"`,
    code,
    "__rc=$?",
    `{ declare -p $(compgen -v | grep -vxFf "${BASELINE}" | grep -v '^__') 2>/dev/null; declare -f; } > "${STATE}.new" && mv "${STATE}.new" "${STATE}"`,
    "exit $__rc",
  ].join("\n");

async function runShell(code: string, timeoutMs: number) {
  const file = join(work, ".readme-block.sh");
  writeFileSync(file, wrap(code));
  // Its own process group: a server a block leaves in the background (`&`) is stopped with it.
  // Nothing but the README's own lines points the demo and the CLI at the service (its setup block exports VIDLIVE_API_URL).
  const proc = Bun.spawn(["setsid", "bash", file], { cwd: work, env: cleanEnv, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const out = { stdout: "", stderr: "" };
  const readers = (["stdout", "stderr"] as const).map(async (name) => {
    for await (const chunk of proc[name]) out[name] += new TextDecoder().decode(chunk);
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const exitCode = await proc.exited;
  clearTimeout(timer);
  try {
    process.kill(-proc.pid, "SIGKILL");
  } catch {}
  await Promise.all(readers);
  return { exitCode, ...out };
}

// ---- substitutions (the only ones) ----

let apiKey = "";
function substituted(block: Block): string {
  // A JavaScript block is saved under the file name its text gives, then run with node, as the README says.
  if (block.lang !== "sh") {
    const file = /save as `([\w.-]+)`/.exec(
      README.slice(0, README.indexOf(`<!-- readme-test: ${block.name} -->`))
        .split("\n")
        .slice(-6)
        .join("\n"),
    )?.[1];
    return `cat > ${file} <<'README_EOF'\n${block.code}\nREADME_EOF\nnode ${file}`;
  }
  let code = block.code.replaceAll("http://localhost:8080", base).replace(/(export VIDLIVE_API_KEY=)sk_live_…/, `$1${apiKey}`);
  if (block.name === "source-url-local") code = code.replace(/\b8000\b/g, String(filePort));
  return code;
}

// ---- what a user would see, per block ----

const api = (path: string) => fetch(`${base}/api/public/v1${path}`, { headers: { authorization: `Bearer ${apiKey}` } }).then((r) => r.json() as Promise<any>);
async function until(fn: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn()) && Date.now() < deadline) await Bun.sleep(250);
}
const lastLine = (s: string) => s.trim().split("\n").at(-1) ?? "";

async function expectPlayable(url: string) {
  expect(url.startsWith(`${base}/`)).toBe(true);
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(await res.text()).toStartWith("#EXTM3U");
}

interface Check {
  timeoutMs: number;
  /** A tool the README asks the user to install for this block; without it the block is skipped (said on stderr). */
  needs?: string;
  before?: () => Promise<void>;
  /** Runs beside the block (e.g. watching a stream go LIVE while ffmpeg pushes); its result goes to `after`. */
  during?: (done: () => boolean) => Promise<unknown>;
  after: (r: { exitCode: number; stdout: string; stderr: string }, during: unknown) => Promise<void> | void;
}

const checks: Record<string, Check> = {
  setup: { timeoutMs: 10_000, after: (r) => expect(r.exitCode).toBe(0) },
  "first-curl": {
    timeoutMs: 10_000,
    after: (r) => {
      const body = JSON.parse(r.stdout);
      expect(body.success).toBe(true);
      expect(body.data.organization.name).toBe("default");
    },
  },
  demo: {
    timeoutMs: 120_000,
    async after(r) {
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain("COMPLETED");
      const hls = /HLS \(any HLS player\):\s+(\S+)/.exec(r.stdout)?.[1];
      await expectPlayable(hls!);
      expect(r.stdout).toMatch(/download http:\/\/localhost:\d+\/media\/\S+/);
      // Every COMPLETED video has a watch page: the demo must print it, and it must load.
      const watch = /Watch in a browser:\s+(\S+)/.exec(r.stdout)?.[1];
      expect(watch).toStartWith(`${base}/watch/`);
      expect((await fetch(watch!)).status).toBe(200);
    },
  },
  upload: {
    timeoutMs: 120_000,
    async after(r) {
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain("PUT: HTTP 200");
      const body = JSON.parse(lastLine(r.stdout));
      expect(body.data.video.status).toBe("COMPLETED");
      expect(body.data.video.title).toBe("My upload");
      expect(body.data.renditions.map((x: { quality: string }) => x.quality)).toEqual(["360p", "720p"]);
      await expectPlayable(body.data.video.url);
    },
  },
  "source-url-local": {
    timeoutMs: 120_000,
    // The README: stop `npm start`, start it again with ALLOW_PRIVATE_NETWORK=1.
    async before() {
      await stopService();
      const again = await startService({ ALLOW_PRIVATE_NETWORK: "1" });
      expect(again.stderr()).not.toContain("API key (shown once)");
    },
    async after(r) {
      expect(r.exitCode).toBe(0);
      expect(lastLine(r.stdout)).toBe("COMPLETED");
      const videos = ((await api("/videos/")).data.items as { video: { title: string; status: string } }[]).map((i) => i.video);
      expect(videos.find((v) => v.title === "From my machine")?.status).toBe("COMPLETED");
    },
  },
  watch: {
    timeoutMs: 10_000,
    async after(r) {
      expect(r.exitCode).toBe(0);
      const url = lastLine(r.stdout);
      expect(url).toStartWith(`${base}/watch/`);
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(await page.text()).toContain("<video");
    },
  },
  "webhook-register": {
    timeoutMs: 10_000,
    async after(r) {
      expect(r.exitCode).toBe(0);
      const body = JSON.parse(r.stdout);
      expect(body.success).toBe(true);
      expect(body.data.signing_secret).toStartWith("whsec_");
      expect(body.data.endpoint).toMatchObject({ url: "https://hooks.example.com/video", events: ["VIDEO_TRANSCODING_COMPLETED", "VIDEO_TRANSCODING_FAILED"] });
      // Registered for the organization of the README's key: the list shows it.
      const listed = ((await api("/webhooks/")).data.items as { id: string }[]).map((e) => e.id);
      expect(listed).toContain(body.data.endpoint.id);
    },
  },
  tus: {
    timeoutMs: 60_000,
    async after(r) {
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain("100%");
      const id = lastLine(r.stdout);
      expect(id).toStartWith("vid_");
      await until(async () => (await api(`/videos/${id}/`)).data.video.status !== "TRANSCODING");
      expect((await api(`/videos/${id}/`)).data.video.status).toBe("COMPLETED");
    },
  },
  "live-ffmpeg": {
    timeoutMs: 60_000,
    async during(done) {
      // What the user sees in GET /livestreams/ while ffmpeg pushes.
      while (!done()) {
        const streams = ((await api("/livestreams/")).data?.items ?? []) as { status: string; hls_url: string }[];
        const live = streams.find((s) => s.status === "LIVE");
        if (live) return live;
        await Bun.sleep(250);
      }
      return null;
    },
    async after(r, live) {
      expect(r.exitCode).toBe(0);
      expect(r.stderr).toBe("");
      const stream = live as { hls_url: string } | null;
      expect(stream).not.toBeNull();
      expect(lastLine(r.stdout)).toBe(stream!.hls_url);
    },
  },
  settings: {
    timeoutMs: 30_000,
    async after(r) {
      expect(r.exitCode).toBe(0);
      // The terminal sets no PORT or BASE_URL: the link names the running service (its recorded address), not :8080.
      const link = /owner_setup_url: (\S+)/.exec(r.stdout)?.[1] ?? "";
      expect(link).toStartWith(`${base}/settings/setup/`);
      const page = await fetch(link);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('type="password"');
    },
  },
  operations: {
    timeoutMs: 10_000,
    after(r) {
      expect(r.exitCode).toBe(0);
      const [ready, ...metrics] = r.stdout.trim().split("\n");
      expect(JSON.parse(ready!)).toMatchObject({ status: "ready", failed: [] });
      expect(metrics.length).toBe(3);
      for (const line of metrics) expect(line).toMatch(/^vidlive_http_requests_total\{.*\} \d+$/);
    },
  },
  backup: {
    timeoutMs: 20_000,
    needs: "sqlite3",
    after(r) {
      expect(r.exitCode).toBe(0);
      const [file] = readdirSync(join(work, "backups"));
      const db = new Database(join(work, "backups", file!), { readonly: true });
      try {
        expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
        expect((db.query("SELECT count(*) AS n FROM actors WHERE kind = 'video'").get() as { n: number }).n).toBeGreaterThanOrEqual(3);
      } finally {
        db.close();
      }
    },
  },
};

const blocks = markedBlocks(README);

beforeAll(() => {
  // The names a bare script already has: only what a block defines is carried over.
  const file = join(work, ".readme-baseline.sh");
  writeFileSync(file, "compgen -v\n");
  writeFileSync(BASELINE, Bun.spawnSync(["bash", file], { cwd: work, env: cleanEnv }).stdout.toString());
});

afterAll(async () => {
  await stopService();
  rmSync(work, { recursive: true, force: true });
});

test("every marked README block has a check, and the README marks the walkthrough's blocks", () => {
  const names = blocks.map((b) => b.name);
  expect(names.filter((n) => !checks[n])).toEqual([]);
  for (const required of ["setup", "first-curl", "demo", "upload", "source-url-local", "webhook-register", "live-ffmpeg", "backup"]) expect(names).toContain(required);
  expect(blocks.every((b) => b.lang === "sh" || b.lang === "js")).toBe(true);
});

test("every relative link and image of the README points to a file of the repository", () => {
  const targets = [...README.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/.test(t));
  expect(targets.length).toBeGreaterThan(10);
  expect(targets.filter((t) => !existsSync(join(ROOT, t)))).toEqual([]);
  // In-page links (the table of contents) against GitHub's heading anchors.
  const slug = (h: string) =>
    h
      .toLowerCase()
      .replace(/[^\w\- ]/g, "")
      .replace(/ /g, "-");
  const anchors = new Set([...README.matchAll(/^#{2,4} (.+)$/gm)].map((m) => slug(m[1]!)));
  const inPage = [...README.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
  expect(inPage.length).toBeGreaterThan(15);
  expect(inPage.filter((a) => !anchors.has(a))).toEqual([]);
});

test("the configuration table names every variable the service reads (src/config.ts and any other src/ file, e.g. MEDIASOUP_WORKER_BIN)", () => {
  const files = [...new Bun.Glob("src/**/*.ts").scanSync(ROOT)].filter((f) => !f.endsWith(".test.ts"));
  const text = files.map((f) => readFileSync(join(ROOT, f), "utf8")).join("\n");
  // VIDLIVE_* are the client programs' own (demo, CLI: VIDLIVE_API_URL, VIDLIVE_API_KEY) and tests' (VIDLIVE_FAULT): not the server's settings.
  const vars = new Set([...text.matchAll(/env, "([A-Z0-9_]+)"|env\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1] ?? m[2]!).filter((v) => !v.startsWith("VIDLIVE_")));
  expect(vars).toContain("MEDIASOUP_WORKER_BIN");
  const section = README.slice(README.indexOf("## Configuration"), README.indexOf("\n## ", README.indexOf("## Configuration") + 5));
  expect([...vars].filter((v) => !v.startsWith("AWS_") && !section.includes(`\`${v}\``))).toEqual([]);
});

test("npm start prints the key and the next step on stderr; then the README's blocks work as pasted", async () => {
  const first = await startService();
  const banner = first.stderr();
  apiKey = /API key \(shown once\): (sk_live_\S+)/.exec(banner)?.[1] ?? "";
  expect(apiKey).not.toBe("");
  expect(banner).toContain(`export VIDLIVE_API_KEY=${apiKey}`);
  expect(banner).toContain("npm run demo");
  expect(first.stdout()).not.toContain(apiKey); // stdout is the JSON logs: the key never goes there

  for (const block of blocks) {
    const check = checks[block.name]!;
    if (check.needs && !Bun.which(check.needs)) {
      console.warn(`README block "${block.name}" not run: ${check.needs} is not installed`);
      continue;
    }
    await check.before?.();
    let finished = false;
    const during = check.during?.(() => finished);
    const result = await runShell(substituted(block), check.timeoutMs);
    finished = true;
    const seen = await during;
    try {
      await check.after(result, seen);
    } catch (err) {
      throw new Error(`README block "${block.name}" (exit ${result.exitCode}):\n${result.stdout}\n${result.stderr}\n${(err as Error).message}`);
    }
  }
}, 300_000);

test("npm run demo says how to fix what is missing: the service, then the key", async () => {
  const demo = (env: Record<string, string>, ...args: string[]) => {
    const p = Bun.spawnSync(["npm", "run", "-s", "demo", "--", ...args], { cwd: work, env: { ...cleanEnv, ...env }, stdout: "pipe", stderr: "pipe" });
    return { code: p.exitCode, err: p.stderr.toString() };
  };
  const down = demo({ VIDLIVE_API_KEY: "sk_live_x_y" }, "--api-url", `http://localhost:${freePort()}`);
  expect(down.code).toBe(1);
  expect(down.err).toContain("Cannot reach the service");
  expect(down.err).toContain("npm start");
  if (!service) await startService();
  const noKey = demo({ VIDLIVE_API_URL: base });
  expect(noKey.code).toBe(1);
  expect(noKey.err).toContain("No API key");
  expect(noKey.err).toContain("API key (shown once)");
  const badKey = demo({ VIDLIVE_API_URL: base, VIDLIVE_API_KEY: "sk_live_wrong_key" });
  expect(badKey.code).toBe(1);
  expect(badKey.err).toContain("refused the API key");
  expect(demo({}, "--frobnicate").err).toContain("Unknown option --frobnicate");
}, 60_000);
