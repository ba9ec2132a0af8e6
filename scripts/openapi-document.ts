/**
 * Writes the service's OpenAPI document (what GET /openapi/json answers) to a
 * file, from a service created in a throw-away DATA_DIR (nothing listens):
 *
 *   bun scripts/openapi-document.ts openapi.json [--base-url https://video.example.com]
 *
 * Used by `npm run lint:openapi` and `npm run sdk:generate`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";

export async function openapiDocument(baseUrl = "http://localhost:8080"): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), "vidlive-openapi-"));
  try {
    const service = await createService(loadConfig({ DATA_DIR: dataDir, BASE_URL: baseUrl, PORT: "0", RTMP_PORT: "0", LOG_LEVEL: "silent" }), {
      logger: silentLogger,
      transcriber: null,
    });
    try {
      const res = await service.app.handle(new Request("http://localhost/openapi/json"));
      if (!res.ok) throw new Error(`GET /openapi/json answered ${res.status}`);
      return (await res.json()) as Record<string, unknown>;
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const out = args.find((a) => !a.startsWith("--"));
  const at = args.indexOf("--base-url");
  if (!out || args.includes("--help")) {
    console.error("usage: bun scripts/openapi-document.ts <out.json> [--base-url URL]");
    process.exit(out ? 0 : 2);
  }
  const doc = await openapiDocument(at >= 0 ? args[at + 1] : undefined);
  mkdirSync(dirname(resolve(out)), { recursive: true });
  writeFileSync(resolve(out), `${JSON.stringify(doc, null, 2)}\n`);
  console.error(`wrote ${resolve(out)}`);
  process.exit(0);
}
