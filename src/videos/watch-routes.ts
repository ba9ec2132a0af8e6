import { Elysia } from "elysia";
import { videoStatus } from "../../machines/video-machine.ts";
import type { videoResource } from "./video-resource.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { licencePath, type DrmTokens } from "./drm-tokens.ts";
import { readWatchEntry } from "./watch-entry.ts";
import { type MediaGate, type MediaGrant, OPEN_GATE } from "../storage/media-routes.ts";
import { WATCH_CSS, WATCH_JS, notFoundPageHtml, refusedPageHtml, type WatchPageView, watchPageHtml } from "./watch-page.ts";

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

/**
 * `same-origin`: the page's own media requests (same origin by construction: every URL in it is a path) name the page
 * as their Referer, which a playback restriction lets through (the page itself was judged by its embedder's Referer);
 * nothing is sent to other origins.
 */
const html = (body: string, status: number, privately = false) =>
  new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": CSP,
      "cache-control": privately ? "private, no-store" : "no-cache",
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
    },
  });

const asset = (body: string, type: string) => () =>
  new Response(body, { headers: { "content-type": `${type}; charset=utf-8`, "cache-control": "public, max-age=300", "x-content-type-options": "nosniff" } });

type VideoRecord = Parameters<typeof videoResource>[0];

/** The path of a URL this service made (media URLs carry BASE_URL), so the page asks the host it was loaded from. */
const pathOf = (url: string | null | undefined) => (url ? new URL(url).pathname : null);

/** A signed video's media paths carry the viewer's tokens (Mux Player's names): `?token=` (aud `v`) on the manifest, subtitles and the DRM licence (`playback_token`), `?thumbnail_token=` (aud `t`) on the poster, `?storyboard_token=` (aud `s`) on the storyboard; without the latter two a signed page shows neither. */
function tokenPaths(grant: MediaGrant, query: URLSearchParams) {
  const jwt = grant.token;
  const add = (path: string | null, param: string, token: string | null) => (path && token ? `${path}${path.includes("?") ? "&" : "?"}${param}=${encodeURIComponent(token)}` : path);
  /** A public video's image as is; a signed one's only with its own token (else none: the page shows no broken image). */
  const image = (path: string | null, param: string) => (!jwt ? path : query.get(param) ? add(path, "token", query.get(param)) : null);
  return {
    media: (path: string | null) => add(path, "token", jwt),
    poster: (path: string | null) => image(path, "thumbnail_token"),
    storyboard: (path: string | null) => image(path, "storyboard_token"),
    licence: (path: string | null) => add(path, "playback_token", jwt),
  };
}

/** A refused page: the 403 envelope (`details` naming what failed) for a program, the same reason as a page for a browser. */
async function refusedPage(request: Request, refusal: Response): Promise<Response> {
  if (!(request.headers.get("accept") ?? "").includes("text/html")) return refusal;
  const body = (await refusal.json()) as { error?: { details?: Record<string, string> } };
  return html(refusedPageHtml(body.error?.details ?? {}), 403);
}

/**
 * `GET /watch/{token}`: a player page for a COMPLETED video, addressed by its
 * media token (the capability already inside its `url`: whoever can fetch the
 * playlist can watch). Unknown token, deleted or unfinished video: a 404
 * page. The playback gate judges the page first (issue 27): a signed video's
 * page needs `?token=` (aud `v`), which the page hands on to its media; a
 * restriction judges the embedding page's Referer (the page's own media
 * requests name the page as theirs: src/playback/playback-guard.ts). A DRM
 * video plays only with `?drm_token=` (a licence token from the API); the
 * page never mints one, so DRM stays a separate, expiring grant.
 * `?autoplay=1&muted=1`.
 */
export function watchRoutes(deps: { store: MediaStore; runtime: ActorRuntime; tokens: DrmTokens; baseUrl: () => string; gate?: MediaGate }) {
  const gate = deps.gate ?? OPEN_GATE;
  return new Elysia({ name: "watch-routes" })
    .get("/watch/watch.js", asset(WATCH_JS, "text/javascript"), { detail: { hide: true } })
    .get("/watch/watch.css", asset(WATCH_CSS, "text/css"), { detail: { hide: true } })
    .get(
      "/watch/:token",
      async ({ params, request }) => {
        if (!/^[0-9a-f]{40}$/.test(params.token)) return html(notFoundPageHtml(), 404);
        const grant = await gate(request, params.token, "watch");
        if (grant instanceof Response) return refusedPage(request, grant);
        const videoId = await readWatchEntry(deps.store, params.token);
        const record = videoId && deps.store.tokenFor(videoId) === params.token ? await deps.runtime.get("video", videoId) : null;
        if (!record || videoStatus(record.value) !== "COMPLETED" || !record.context.outcome?.url) return html(notFoundPageHtml(), 404);
        return html(watchPageHtml(pageView(deps, record, new URL(request.url).searchParams, grant)), 200, grant.private);
      },
      { detail: { hide: true } },
    );
}

/** The page of a COMPLETED video: its paths, each with the tokens it needs. */
function pageView(deps: { tokens: DrmTokens; baseUrl: () => string }, record: VideoRecord, query: URLSearchParams, grant: MediaGrant): WatchPageView {
  const outcome = record.context.outcome!;
  const paths = tokenPaths(grant, query);
  const prefix = new URL(deps.baseUrl()).pathname.replace(/\/+$/, "");
  const dash = outcome.url!.endsWith(".mpd");
  const drmToken = query.get("drm_token");
  const licence = record.context.drm && drmToken && deps.tokens.verify(record.id, drmToken) === "ok" ? `${prefix}${licencePath(record.id)}?token=${encodeURIComponent(drmToken)}` : null;
  return {
    title: record.context.title,
    manifest: paths.media(pathOf(outcome.url))!,
    kind: dash ? "dash" : "hls",
    poster: paths.poster(pathOf(outcome.posters?.thumbnailUrl)),
    storyboard: paths.storyboard(pathOf(outcome.posters?.storyboardUrl)),
    // hls.js plays the transcript through the page's <track>; shaka reads the DASH manifest's text set.
    subtitles: dash ? null : paths.media(pathOf(outcome.transcript?.url)),
    licence: paths.licence(licence),
    autoplay: query.get("autoplay") === "1",
    muted: query.get("muted") === "1",
    prefix,
    videoId: record.id,
  };
}
