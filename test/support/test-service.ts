import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, type Config } from "../../src/config.ts";
import { silentLogger, type Logger } from "../../src/log.ts";
import { createService, type Service } from "../../src/service.ts";
import type { VidliveClient } from "../../packages/client/src/client.ts";
import { sdkClient } from "./api.ts";
import { type Sqld, startSqld } from "./sqld.ts";

export interface TestService {
  service: Service;
  dataDir: string;
  /** Real HTTP base, e.g. http://127.0.0.1:PORT */
  base: string;
  /** The default organization's id and key. */
  orgId: string;
  apiKey: string;
  /** fetch against the API with the default key. */
  api(path: string, init?: RequestInit & { json?: unknown; key?: string | null }): Promise<Response>;
  /** The typed SDK (packages/client) with the default key: `t.client.GET("/api/public/v1/videos/{id}/", …)`. */
  client: VidliveClient;
  /** Stops the service; keeps the data dir unless `cleanup` (for restart tests). */
  stop(opts?: { cleanup?: boolean }): Promise<void>;
}

/**
 * VIDLIVE_TEST_DATABASE=sqld (or `sqld-ws`, `sqld-http`): a test service not
 * given a DATABASE_URL runs on a real libSQL server instead of
 * DATA_DIR/service.db, through `libsql://…?tls=0` (HTTP in @libsql/client
 * 0.18; or `ws://…`, `http://…`). One sqld per DATA_DIR, started on first
 * use; its URLs are written to DATA_DIR/test-sqld.json, so a restart on the
 * same DATA_DIR and the child processes given it (service-child.ts) join the
 * same database. The process that started it stops it at
 * `stop({cleanup: true})`; a watchdog kills it once that process is gone
 * (`bun test` runs no exit handlers, and a test may end by kill -9).
 */
const TEST_DATABASE = process.env.VIDLIVE_TEST_DATABASE;
const SQLD_FILE = "test-sqld.json";
const ownedSqld = new Map<string, { sqld: Sqld; watchdog: ReturnType<typeof Bun.spawn> }>();

/** A shell loop that kills sqld (if that pid is still this sqld) once this process is gone. */
function watchdog(sqld: Sqld): ReturnType<typeof Bun.spawn> {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 0.5; done; grep -q "${sqld.dir}" /proc/${sqld.pid}/cmdline 2>/dev/null && kill -9 ${sqld.pid}`;
  const w = Bun.spawn(["sh", "-c", script], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  w.unref();
  return w;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

type SqldUrls = Pick<Sqld, "url" | "wsUrl" | "httpUrl">;
const pick = (u: SqldUrls) => (TEST_DATABASE === "sqld-http" ? u.httpUrl : TEST_DATABASE === "sqld-ws" ? u.wsUrl : u.url);

async function testDatabaseUrl(dataDir: string): Promise<string> {
  const owned = ownedSqld.get(dataDir);
  if (owned) return pick(owned.sqld);
  const file = join(dataDir, SQLD_FILE);
  if (existsSync(file)) {
    const found = JSON.parse(readFileSync(file, "utf8")) as SqldUrls & { pid: number };
    if (alive(found.pid)) return pick(found);
  }
  const sqld = await startSqld();
  ownedSqld.set(dataDir, { sqld, watchdog: watchdog(sqld) });
  writeFileSync(file, JSON.stringify({ url: sqld.url, wsUrl: sqld.wsUrl, httpUrl: sqld.httpUrl, pid: sqld.pid }));
  return pick(sqld);
}

/**
 * Starts the real service (real database file in a temp DATA_DIR, real HTTP on
 * a random port). Pass `dataDir` to restart on the same files.
 */
export async function startTestService(
  opts: { env?: Record<string, string>; dataDir?: string; listen?: boolean; org?: { orgId: string; apiKey: string }; logger?: Logger } = {},
): Promise<TestService> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "svc-"));
  const database = TEST_DATABASE?.startsWith("sqld") && !opts.env?.DATABASE_URL ? { DATABASE_URL: await testDatabaseUrl(dataDir) } : {};
  // The service's public address is the one the test reaches (PORT=0: the bound port, src/bound-address.ts); a BASE_URL the test chose (e.g. one the process cannot reach) stays.
  const address = opts.env?.PORT && opts.env.PORT !== "0" && !opts.env.BASE_URL ? { BASE_URL: `http://127.0.0.1:${opts.env.PORT}` } : {};
  const config: Config = loadConfig({
    DATA_DIR: dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    RTMP_PORT: "0",
    SRT_PORT: "0",
    ALLOW_PRIVATE_NETWORK: "1",
    LOG_LEVEL: "silent",
    // A loaded 2-core machine may take longer than the 15 s default to answer (an argon2 sign-in behind two encodes):
    // tests check answers, not speed; the deadline's own tests set theirs.
    REQUEST_TIMEOUT_MS: "60000",
    ...database,
    ...address,
    ...opts.env,
  });
  const service = await createService(config, { logger: opts.logger ?? (process.env.TEST_LOGS ? undefined : silentLogger) });
  let org = opts.org;
  if (!org) {
    const created = await service.orgs.createOrg("test");
    org = { orgId: created.org.id, apiKey: created.apiKey };
    // Tests poll; the per-key ceiling is exercised on its own in rate-limits.test.ts.
    await service.orgs.updateSettings(org.orgId, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 1_000_000, livestreamsCreatePerMinute: 1_000, videosCreatePerMinute: 1_000 } }));
  }
  let base = "http://localhost";
  if (opts.listen !== false) {
    const { port } = await service.listen();
    base = `http://127.0.0.1:${port}`;
  }
  const apiKey = org.apiKey;
  return {
    service,
    dataDir,
    base,
    orgId: org.orgId,
    apiKey,
    client: sdkClient(base, apiKey, opts.listen === false ? (request) => service.app.handle(request) : undefined),
    api(path, init = {}) {
      const headers = new Headers(init.headers);
      const key = init.key === undefined ? apiKey : init.key;
      if (key !== null) headers.set("authorization", `Bearer ${key}`);
      let body = init.body;
      if (init.json !== undefined) {
        body = JSON.stringify(init.json);
        headers.set("content-type", "application/json");
      }
      const url = path.startsWith("http") ? path : `${base}/api/public/v1${path}`;
      if (opts.listen === false) return Promise.resolve(service.app.handle(new Request(url, { ...init, headers, body })));
      return fetch(url, { ...init, headers, body, redirect: "manual" });
    },
    async stop({ cleanup = true } = {}) {
      await service.stop();
      const owned = ownedSqld.get(dataDir);
      if (cleanup && owned) {
        ownedSqld.delete(dataDir);
        owned.watchdog.kill();
        await owned.sqld.stop();
      }
      if (cleanup) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
