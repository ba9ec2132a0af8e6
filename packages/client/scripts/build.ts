/**
 * `npm run sdk:build`: dist/index.js (ESM for Node 20, openapi-fetch bundled
 * in: the package has no runtime dependency) and the declarations (tsc), with
 * the type declarations of openapi-fetch and openapi-typescript-helpers copied
 * beside them (dist/vendor/), so a consumer type-checks with nothing else installed.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const PKG = join(import.meta.dir, "..");
const ROOT = join(PKG, "../..");
const DIST = join(PKG, "dist");

rmSync(DIST, { recursive: true, force: true });
const built = await Bun.build({ entrypoints: [join(PKG, "src/index.ts")], target: "node", format: "esm", outdir: DIST, minify: false, sourcemap: "none" });
if (!built.success) throw new AggregateError(built.logs, "bun build failed");

const tsc = Bun.spawnSync([join(ROOT, "node_modules/.bin/tsc"), "-p", join(PKG, "tsconfig.json")], { stdout: "inherit", stderr: "inherit" });
if (tsc.exitCode !== 0) throw new Error(`tsc failed (${tsc.exitCode})`);
copyFileSync(join(PKG, "src/schema.d.ts"), join(DIST, "schema.d.ts"));

mkdirSync(join(DIST, "vendor"));
const vendor = (from: string, to: string, rewrite: Record<string, string>) => {
  let text = readFileSync(join(ROOT, "node_modules", from), "utf8");
  for (const [spec, local] of Object.entries(rewrite)) text = text.replaceAll(`'${spec}'`, `'${local}'`).replaceAll(`"${spec}"`, `"${local}"`);
  writeFileSync(join(DIST, "vendor", to), `// Copied from ${from.split("/dist/")[0]} (MIT), bundled into dist/index.js.\n${text}`);
};
vendor("openapi-fetch/dist/index.d.ts", "openapi-fetch.d.ts", { "openapi-typescript-helpers": "./openapi-typescript-helpers.js" });
vendor("openapi-typescript-helpers/dist/index.d.ts", "openapi-typescript-helpers.d.ts", {});
for (const file of readdirSync(DIST).filter((f) => f.endsWith(".d.ts"))) {
  const path = join(DIST, file);
  writeFileSync(path, readFileSync(path, "utf8").replaceAll('"openapi-fetch"', '"./vendor/openapi-fetch.js"'));
}

// The bundle may import Node built-ins only: anything else would be a dependency to fetch.
const js = readFileSync(join(DIST, "index.js"), "utf8");
const bare = [...js.matchAll(/\bfrom\s+["']([^"'.][^"']*)["']/g)].map((m) => m[1]!).filter((s) => !s.startsWith("node:"));
if (bare.length > 0) throw new Error(`dist/index.js imports packages: ${bare.join(", ")}`);
console.error(`built ${DIST}: ${readdirSync(DIST).join(", ")}`);
