import { Elysia } from "elysia";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const dist = (pkg: string, file: string) => join(dirname(require.resolve(`${pkg}/package.json`)), file);

/**
 * Player scripts served by the service itself, so the settings screen and the
 * watch page load nothing from a CDN (they work offline). Names are fixed;
 * the files come from the installed packages.
 */
const ASSETS: Record<string, string> = {
  "hls.min.js": dist("hls.js", "dist/hls.min.js"),
  "shaka-player.compiled.js": dist("shaka-player", "dist/shaka-player.compiled.js"),
};

export const staticAssets = new Elysia({ name: "static-assets" }).get(
  "/assets/:name",
  ({ params, set }) => {
    const path = ASSETS[params.name];
    if (!path) {
      set.status = 404;
      return "Not found";
    }
    return new Response(Bun.file(path), { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" } });
  },
  { detail: { hide: true } },
);
