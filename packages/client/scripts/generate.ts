/**
 * `npm run sdk:generate`: the service's OpenAPI document (from a service in a
 * throw-away DATA_DIR, scripts/openapi-document.ts) → openapi.json and, through
 * openapi-typescript, src/schema.d.ts. Both are committed: run after changing
 * a route, a response schema or an event payload.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openapiDocument } from "../../../scripts/openapi-document.ts";

const PKG = join(import.meta.dir, "..");
const ROOT = join(PKG, "../..");

export async function generate(outDir = PKG): Promise<void> {
  const doc = await openapiDocument("http://localhost:8080");
  const json = join(outDir, "openapi.json");
  writeFileSync(json, `${JSON.stringify(doc, null, 2)}\n`);
  const run = Bun.spawnSync(
    [join(ROOT, "node_modules/.bin/openapi-typescript"), json, "--output", join(outDir, "src/schema.d.ts"), "--redocly", join(ROOT, "redocly.yaml")],
    // Its lint warnings are redocly.yaml's (see `npm run lint:openapi`): shown only when it fails.
    { stdout: "pipe", stderr: "pipe" },
  );
  if (run.exitCode !== 0) throw new Error(`openapi-typescript failed (${run.exitCode}): ${run.stderr.toString()}`);
}

if (import.meta.main) {
  await generate();
  console.error(`wrote ${join(PKG, "openapi.json")} and ${join(PKG, "src/schema.d.ts")}`);
  process.exit(0);
}
