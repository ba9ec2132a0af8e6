import { Elysia } from "elysia";
import { playbackPages } from "./playback-pages.ts";
import { readdirSync } from "node:fs";
import { extname, join } from "node:path";
import { analyticsPages } from "./analytics-pages.ts";
import { authPages } from "./auth-pages.ts";
import type { SettingsDeps } from "./deps.ts";
import { readFormBody } from "./form-body.ts";
import { keysPages } from "./keys-pages.ts";
import { livePages } from "./live-pages.ts";
import { membersPages } from "./members-pages.ts";
import { organizationPages } from "./organization-pages.ts";
import { redirect } from "./page.ts";
import { sessionGuard } from "./session-guard.ts";
import { can } from "./types.ts";
import { videosPages } from "./videos-pages.ts";
import { webhooksPages } from "./webhooks-pages.ts";

const TYPES: Record<string, string> = { css: "text/css; charset=utf-8", js: "text/javascript; charset=utf-8" };
const UPLOT = join(import.meta.dir, "..", "..", "node_modules", "uplot", "dist");
/** Every stylesheet and script of assets/ (listed once at start: a request names a file of that list or gets 404). */
const ASSETS: Record<string, { file: string; type: string }> = {
  ...Object.fromEntries(
    readdirSync(join(import.meta.dir, "assets"))
      .filter((name) => TYPES[extname(name).slice(1)])
      .map((name) => [name, { file: join(import.meta.dir, "assets", name), type: TYPES[extname(name).slice(1)]! }]),
  ),
  // Issue 28: the analytics pages' charts (uPlot from node_modules, no CDN).
  "uplot.iife.min.js": { file: join(UPLOT, "uPlot.iife.min.js"), type: "text/javascript; charset=utf-8" },
  "uplot.min.css": { file: join(UPLOT, "uPlot.min.css"), type: "text/css; charset=utf-8" },
};

/**
 * The organization's settings screen (issue 13), served under /settings by the
 * service itself. A public plugin of the app (no API key): the sections carry
 * their own access rule, the session (session-guard.ts).
 */
export function settingsRoutes(deps: SettingsDeps) {
  return (
    new Elysia({ name: "settings", prefix: "/settings", detail: { hide: true } })
      // Before every section: their forms are read by the bounded parser, never whole (issue 23).
      .onParse(({ request }, contentType) => readFormBody(request, contentType))
      .get(
        "/assets/:name",
        ({ params }) => {
          const a = ASSETS[params.name];
          if (!a) return new Response("Not found", { status: 404 });
          return new Response(Bun.file(a.file), { headers: { "content-type": a.type, "cache-control": "public, max-age=300" } });
        },
        { detail: { hide: true } },
      )
      .use(authPages(deps))
      // Owners land on API keys (their first task after setup), everyone else on Videos.
      .use(new Elysia().use(sessionGuard(deps)).get("", ({ member }) => redirect(can(member.role, "keys.manage") ? "/settings/keys" : "/settings/videos")))
      .use(keysPages(deps))
      .use(webhooksPages(deps))
      .use(videosPages(deps))
      .use(livePages(deps))
      .use(organizationPages(deps))
      .use(membersPages(deps))
      .use(playbackPages(deps))
      .use(analyticsPages(deps))
  );
}
