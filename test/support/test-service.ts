import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, type Config } from "../../src/config.ts";
import { silentLogger, type Logger } from "../../src/log.ts";
import { createService, type Service } from "../../src/service.ts";

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
  /** Stops the service; keeps the data dir unless `cleanup` (for restart tests). */
  stop(opts?: { cleanup?: boolean }): Promise<void>;
}

/**
 * Starts the real service (real database file in a temp DATA_DIR, real HTTP on
 * a random port). Pass `dataDir` to restart on the same files.
 */
export async function startTestService(
  opts: { env?: Record<string, string>; dataDir?: string; listen?: boolean; org?: { orgId: string; apiKey: string }; logger?: Logger } = {},
): Promise<TestService> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "svc-"));
  const config: Config = loadConfig({ DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", RTMP_PORT: "0", ALLOW_PRIVATE_NETWORK: "1", LOG_LEVEL: "silent", ...opts.env });
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
    service.config.baseUrl = base;
  }
  const apiKey = org.apiKey;
  return {
    service,
    dataDir,
    base,
    orgId: org.orgId,
    apiKey,
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
      if (cleanup) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
