import { Elysia } from "elysia";
import { videoStatus } from "../../machines/video-machine.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { licencePath, type DrmTokens } from "./drm-tokens.ts";
import { readWatchEntry } from "./watch-entry.ts";
import { WATCH_CSS, WATCH_JS, notFoundPageHtml, watchPageHtml } from "./watch-page.ts";

/**
 * Embeddable from any origin (`frame-ancestors *`, no X-Frame-Options), and
 * otherwise closed: scripts, styles, images, media and fetches from this
 * origin only (MSE and hls.js's worker use blob: URLs), no plugins, no forms,
 * no <base>. The page loads nothing from outside the service.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors *",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const html = (body: string, status: number) =>
  new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": CSP,
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });

const asset = (body: string, type: string) => () =>
  new Response(body, { headers: { "content-type": `${type}; charset=utf-8`, "cache-control": "public, max-age=300", "x-content-type-options": "nosniff" } });

/** The path of a URL this service made (media URLs carry BASE_URL), so the page asks the host it was loaded from. */
const pathOf = (url: string | null | undefined) => (url ? new URL(url).pathname : null);

/**
 * `GET /watch/{token}`: a player page for a COMPLETED video, addressed by its
 * media token (the capability already inside its `url`: whoever can fetch the
 * playlist can watch). Unknown token, deleted or unfinished video: a 404
 * page. A DRM video plays only with `?drm_token=` (a licence token from the
 * API); the page never mints one, so DRM stays a separate, expiring grant.
 * `?autoplay=1&muted=1`.
 */
export function watchRoutes(deps: { store: MediaStore; runtime: ActorRuntime; tokens: DrmTokens; baseUrl: () => string }) {
  return new Elysia({ name: "watch-routes" })
    .get("/watch/watch.js", asset(WATCH_JS, "text/javascript"), { detail: { hide: true } })
    .get("/watch/watch.css", asset(WATCH_CSS, "text/css"), { detail: { hide: true } })
    .get(
      "/watch/:token",
      async ({ params, request }) => {
        const { token } = params;
        const videoId = await readWatchEntry(deps.store, token);
        const record = videoId && deps.store.tokenFor(videoId) === token ? await deps.runtime.get("video", videoId) : null;
        const outcome = record?.context.outcome;
        if (!record || videoStatus(record.value) !== "COMPLETED" || !outcome?.url) return html(notFoundPageHtml(), 404);

        const query = new URL(request.url).searchParams;
        const prefix = new URL(deps.baseUrl()).pathname.replace(/\/+$/, "");
        const dash = outcome.url.endsWith(".mpd");
        const drmToken = query.get("drm_token");
        const licence = record.context.drm && drmToken && deps.tokens.verify(record.id, drmToken) === "ok" ? `${prefix}${licencePath(record.id)}?token=${encodeURIComponent(drmToken)}` : null;
        return html(
          watchPageHtml({
            title: record.context.title,
            manifest: pathOf(outcome.url)!,
            kind: dash ? "dash" : "hls",
            poster: pathOf(outcome.posters?.thumbnailUrl),
            storyboard: pathOf(outcome.posters?.storyboardUrl),
            // hls.js plays the transcript through the page's <track>; shaka reads the DASH manifest's text set.
            subtitles: dash ? null : pathOf(outcome.transcript?.url),
            licence,
            autoplay: query.get("autoplay") === "1",
            muted: query.get("muted") === "1",
            prefix,
            videoId: record.id,
          }),
          200,
        );
      },
      { detail: { hide: true } },
    );
}
