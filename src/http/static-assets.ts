import { Elysia } from "elysia";
import { readFileSync } from "node:fs";
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

/** Issue 28: the SDK's `trackPlayback` (packages/client/src/track-playback.ts, no imports) as a browser module, transpiled once. */
const TRACK_SOURCE = join(import.meta.dir, "..", "..", "packages", "client", "src", "track-playback.ts");
let trackJs: string | null = null;
const trackModule = () => (trackJs ??= new Bun.Transpiler({ loader: "ts", target: "browser" }).transformSync(readFileSync(TRACK_SOURCE, "utf8")));

/** A new instance per app: a module-level plugin would keep the last app that used it (see api-context.ts). */
export const staticAssets = () =>
  new Elysia({ name: "static-assets" }).get(
    "/assets/:name",
    ({ params, set }) => {
      if (params.name === "vidlive-track.js")
        return new Response(trackModule(), { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=300", "access-control-allow-origin": "*" } });
      const path = ASSETS[params.name];
      if (!path) {
        set.status = 404;
        return "Not found";
      }
      return new Response(Bun.file(path), { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" } });
    },
    { detail: { hide: true } },
  );
