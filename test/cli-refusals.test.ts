import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COMMANDS } from "../src/cli/commands/index.ts";
import { waitFor } from "./support/events.ts";

setDefaultTimeout(120_000);

/**
 * Issue 16 point 7: help on every command, refusals of what the CLI does not
 * understand, no database created by mistake, configuration errors as one
 * readable line (CLI and server), the server's key banner apart from the logs.
 */
const CLI = join(import.meta.dir, "../src/cli/main.ts");
const MAIN = join(import.meta.dir, "../src/main.ts");
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "cli-refusals-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** An empty DATA_DIR unless the test gives one: no command here may reach a database. */
function run(file: string, args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawnSync(["bun", file, ...args], { env: { ...process.env, DATA_DIR: join(tmp(), "data"), DATABASE_URL: "", ...env }, stdout: "pipe", stderr: "pipe" });
  return { code: proc.exitCode, out: proc.stdout.toString(), err: proc.stderr.toString() };
}
const cli = (...args: string[]) => run(CLI, args);
const lines = (s: string) => s.trim().split("\n");

describe("--help", () => {
  test("every command of the table answers --help and -h with its own usage, exit 0", () => {
    expect(COMMANDS.map((c) => c.name)).toEqual(expect.arrayContaining(["org create", "key create", "listen", "trigger"]));
    for (const c of COMMANDS) {
      for (const flag of ["--help", "-h"]) {
        const r = cli(...c.name.split(" "), flag);
        expect({ name: c.name, flag, code: r.code }).toEqual({ name: c.name, flag, code: 0 });
        expect(r.out).toContain(`Usage: npm run cli -- ${c.name}`);
        for (const f of c.flags) expect(r.out).toContain(`--${f.name}`);
      }
    }
  });

  test("the CLI and each group list their commands with --help", () => {
    const all = cli("--help");
    expect(all.code).toBe(0);
    for (const c of COMMANDS) expect(all.out).toContain(c.name);
    const org = cli("org", "-h");
    expect(org.code).toBe(0);
    expect(org.out).toContain("org set");
    expect(org.out).not.toContain("key revoke");
    // --help wins over everything else on the line, even a required flag missing.
    expect(cli("key", "create", "--help").code).toBe(0);
  });
});

describe("refusals: exit 2, one line naming what is wrong", () => {
  const cases: Array<[string[], string]> = [
    [["frobnicate"], 'unknown command "frobnicate"'],
    [["org", "frob"], 'unknown command "org frob"'],
    [["org", "list", "--bogus"], "unknown flag --bogus"],
    [["org", "list", "-x"], "unknown flag -x"],
    [["org", "list", "--json=yes"], "--json takes no value"],
    [["org", "show"], "--org is required"],
    [["org", "show", "--org"], "--org needs a value"],
    [["org", "show", "--org", "a", "--org", "b"], "--org given more than once"],
    [["org", "set", "--org", "org_x", "--drm", "maybe"], "--drm takes on or off"],
    [["org", "set", "--org", "org_x", "--download-format", "avi"], "--download-format takes mkv or mp4-encrypted"],
    [["org", "set", "--org", "org_x", "--playback-policy", "private"], "--playback-policy takes public or signed"],
    [["key", "create", "--org", "org_x", "--expires-at", "soon"], "--expires-at must be an ISO 8601 time"],
    [["listen", "--forward-to", "ftp://x/hooks", "--api-key", "k"], "--forward-to must be an http(s) URL"],
    [["listen", "--forward-to", "http://localhost:3000/hooks", "--events", "VIDEO_UPLOADED,NOPE", "--api-key", "k"], '--events unknown event "NOPE"'],
    [["listen", "--api-key", "k"], "--forward-to is required"],
    [["trigger", "NOPE", "--api-key", "k"], 'unknown event "NOPE"'],
    [["trigger", "--api-key", "k"], "trigger needs EVENT"],
    [["trigger", "VIDEO_UPLOADED", "extra", "--api-key", "k"], 'unexpected argument "extra"'],
  ];
  for (const [args, message] of cases) {
    test(args.join(" "), () => {
      const r = cli(...args);
      expect(r.code).toBe(2);
      expect(lines(r.err)).toHaveLength(1);
      expect(r.err).toContain(message);
      expect(r.out).toBe("");
    });
  }

  test("listen and trigger without a key say which flag or variable is missing", () => {
    const r = run(CLI, ["trigger", "VIDEO_UPLOADED"], { VIDLIVE_API_KEY: "" });
    expect(r.code).toBe(2);
    expect(r.err.trim()).toBe("--api-key (or VIDLIVE_API_KEY) is required");
  });
});

describe("no database", () => {
  test("a DATA_DIR without a database is refused, and nothing is created there", () => {
    const dataDir = join(tmp(), "typo");
    const r = run(CLI, ["org", "list"], { DATA_DIR: dataDir });
    expect(r.code).toBe(2);
    expect(lines(r.err)).toEqual([`configuration: no database at ${join(dataDir, "service.db")}; start the server once or set DATA_DIR`]);
    expect(existsSync(dataDir)).toBe(false);
  });

  test("so is a DATABASE_URL file that does not exist", () => {
    const file = join(tmp(), "nope.db");
    const r = run(CLI, ["key", "show", "--org", "org_x"], { DATABASE_URL: `file:${file}` });
    expect(r.code).toBe(2);
    expect(r.err).toContain(`no database at ${file}`);
    expect(existsSync(file)).toBe(false);
  });
});

describe("configuration errors are one line and exit 2, CLI and server", () => {
  const bad: Array<[Record<string, string>, string]> = [
    [{ PORT: "abc" }, 'PORT must be a non-negative integer, got "abc"'],
    [{ PORT: "70000" }, "PORT must be a port number (0-65535)"],
    [{ DATABASE_URL: "postgres://db/x" }, "DATABASE_URL must start with file:"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL must be debug, info, warn, error or silent"],
    [{ MEDIA_BACKEND: "gpu" }, "MEDIA_BACKEND must be auto, wasm or native"],
    [{ SECRET_KEY: "abcd" }, "SECRET_KEY must hold at least 32 bytes (64 hex digits), got 2"],
    [{ WEBHOOK_CA_FILE: "/nonexistent/ca.pem" }, "WEBHOOK_CA_FILE cannot be read: /nonexistent/ca.pem (ENOENT)"],
    [{ WEBHOOK_CA_FILE: import.meta.path }, "WEBHOOK_CA_FILE must hold a PEM certificate"],
    [{ DATABASE_URL: "libsql://" }, 'DATABASE_URL must name a server (libsql://host:port), got "libsql://"'],
    [{ STORAGE: "s3", S3_BUCKET: "b", S3_ENDPOINT: "minio:9000" }, 'S3_ENDPOINT must be an http(s) URL, got "minio:9000"'],
    [{ STORAGE: "s3", S3_BUCKET: "b", S3_ACCESS_KEY_ID: "AKIA" }, "S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together"],
    [{ STORAGE: "s3" }, "STORAGE=s3 needs S3_BUCKET"],
    [{ WEBRTC_PORT: "99999" }, 'WEBRTC_PORT must be a port number (0-65535), got "99999"'],
  ];
  for (const [env, message] of bad) {
    const name = Object.entries(env)
      .map((e) => e.join("="))
      .join(" ");
    test(`${name}: the CLI`, () => {
      const r = run(CLI, ["org", "list"], env);
      expect(r.code).toBe(2);
      expect(lines(r.err)).toEqual([expect.stringContaining(`configuration: ${message}`)]);
    });
    test(`${name}: the server (npm start)`, () => {
      const dataDir = join(tmp(), "data");
      const r = run(MAIN, [], { ...env, DATA_DIR: dataDir, RTMP_PORT: "0" });
      expect(r.code).toBe(2);
      expect(lines(r.err)).toEqual([expect.stringContaining(`configuration: ${message}`)]);
      expect(r.err).not.toContain("    at ");
      expect(existsSync(dataDir)).toBe(false);
    });
  }

  /** Past loadConfig: the start-up steps (DATA_DIR, the database, the key file, the listener) of the server alone. */
  const startup: Array<[string, () => Record<string, string>, (env: Record<string, string>) => string]> = [
    [
      "DATA_DIR is a file",
      () => {
        const file = join(tmp(), "file");
        writeFileSync(file, "");
        return { DATA_DIR: file };
      },
      (env) => `configuration: DATA_DIR ${env.DATA_DIR} cannot be used: EEXIST`,
    ],
    [
      "DATA_DIR under a file",
      () => {
        const file = join(tmp(), "file");
        writeFileSync(file, "");
        return { DATA_DIR: join(file, "data") };
      },
      (env) => `configuration: DATA_DIR ${env.DATA_DIR} cannot be used: ENOTDIR`,
    ],
    [
      "DATABASE_URL a server that refuses, its token kept out of the message",
      () => ({ DATABASE_URL: "libsql://127.0.0.1:1?authToken=s3cr3t" }),
      () => "configuration: DATABASE_URL libsql://127.0.0.1:1 cannot be opened: ECONNREFUSED",
    ],
    [
      "DATA_DIR/secret.key truncated",
      () => {
        const dir = tmp();
        writeFileSync(join(dir, "secret.key"), "zz\n");
        return { DATA_DIR: dir };
      },
      (env) => `configuration: ${join(env.DATA_DIR!, "secret.key")} must hold at least 64 hex digits (restore it from a backup, or set SECRET_KEY)`,
    ],
    ["HOST not an address of this machine", () => ({ HOST: "203.0.113.5" }), () => 'configuration: cannot listen on HOST "203.0.113.5" (EADDRNOTAVAIL'],
  ];
  for (const [name, setup, message] of startup) {
    test(`${name}: the server (npm start)`, () => {
      const env = { PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent", ...setup() };
      const r = run(MAIN, [], env);
      expect(r.code).toBe(2);
      expect(lines(r.err)).toEqual([expect.stringContaining(message(env))]);
      expect(r.err).not.toContain("s3cr3t");
      expect(r.err).not.toContain("    at ");
    }, 120_000);
  }

  test("the server on a port already in use: one line, exit 2", async () => {
    const busy = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    try {
      const r = run(MAIN, [], { PORT: String(busy.port), HOST: "127.0.0.1", RTMP_PORT: "0", LOG_LEVEL: "silent" });
      expect(r.code).toBe(2);
      expect(lines(r.err).at(-1)).toContain("configuration: cannot listen, the address is in use");
      expect(r.err).not.toContain("    at ");
    } finally {
      busy.stop(true);
    }
  }, 120_000);
});

describe("npm start takes no arguments", () => {
  for (const flag of ["--help", "-h"]) {
    test(`${flag}: a usage pointing at the README's variables, exit 0, nothing created`, () => {
      const dataDir = join(tmp(), "data");
      const r = run(MAIN, [flag], { DATA_DIR: dataDir });
      expect(r.code).toBe(0);
      expect(r.out).toContain("Usage: npm start");
      expect(r.out).toContain('README.md, section "Configuration"');
      expect(r.err).toBe("");
      expect(existsSync(dataDir)).toBe(false);
    });
  }

  const refused: Array<[string[], string]> = [
    [["--bogus"], "unknown flag --bogus"],
    [["--port=9000"], "unknown flag --port"],
    [["serve"], 'unexpected argument "serve"'],
  ];
  for (const [args, message] of refused) {
    test(`${args.join(" ")}: one line, exit 2, nothing created`, () => {
      const dataDir = join(tmp(), "data");
      const r = run(MAIN, args, { DATA_DIR: dataDir });
      expect(r.code).toBe(2);
      expect(lines(r.err)).toEqual([`${message}: npm start takes no arguments, settings are environment variables (npm start -- --help)`]);
      expect(r.out).toBe("");
      expect(existsSync(dataDir)).toBe(false);
    });
  }

  test("npm start -- --help goes through package.json's script to the same usage", () => {
    const dataDir = join(tmp(), "data");
    const proc = Bun.spawnSync(["npm", "start", "--silent", "--", "--help"], { cwd: join(import.meta.dir, ".."), env: { ...process.env, DATA_DIR: dataDir }, stdout: "pipe", stderr: "pipe" });
    expect(proc.exitCode).toBe(0);
    expect(proc.stdout.toString()).toContain("Usage: npm start");
    expect(existsSync(dataDir)).toBe(false);
  }, 120_000);
});

test("the server's default-key banner is on stderr; stdout carries only JSON log lines", async () => {
  const proc = Bun.spawn(["bun", MAIN], {
    env: { ...process.env, DATA_DIR: join(tmp(), "data"), DATABASE_URL: "", PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const text = { out: "", err: "" };
  const read = async (s: ReadableStream<Uint8Array>, k: "out" | "err") => {
    for await (const c of s) text[k] += new TextDecoder().decode(c);
  };
  const done = Promise.all([read(proc.stdout, "out"), read(proc.stderr, "err")]);
  try {
    await waitFor(async () => /API key \(shown once\): sk_live_\S+/.test(text.err) && text.out.includes("HTTP API listening"), { what: "the banner", timeoutMs: 30_000 });
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
    await done;
  }
  expect(text.out).not.toContain("sk_live_");
  for (const line of lines(text.out)) expect(() => JSON.parse(line)).not.toThrow();
}, 120_000);
