/**
 * A real browser for player tests: Debian's Chromium (`/usr/bin/chromium`,
 * installed by `npm run setup:browser`, which `.ci/run` calls) driven by
 * playwright-core, playing with shaka-player from node_modules.
 *
 * - Why Debian's Chromium and playwright-core: `npx playwright install`
 *   downloads browser builds from a CDN, unreachable here; playwright-core
 *   ships no browser and downloads nothing, and drives any Chromium given by
 *   `executablePath`. It runs under Bun.
 * - Flags: the ones that work as root in a container (`--no-sandbox`), no GPU,
 *   and no background traffic to Google (component updates would try to fetch
 *   the Widevine CDM; ClearKey is built in and needs nothing).
 * - The page server (Bun.serve on 127.0.0.1, port 0) serves player.html and
 *   shaka-player's compiled build from node_modules, nothing from a CDN, plus
 *   optional static files (`files`, e.g. a DASH made in the test). Its origin
 *   differs from the service's (another port), so playing a service's media
 *   and calling its licence endpoint from the page proves CORS.
 * - 127.0.0.1 is a secure context, so EME (navigator.requestMediaKeySystemAccess)
 *   is available without TLS.
 *
 * - HLS (`playHls`, issue 12): hls-player.html loads hls.js's UMD build
 *   (node_modules/hls.js/dist/hls.js) from the same page server, nothing from
 *   a CDN; hls.js renders subtitles natively, so its WebVTT cues land in the
 *   video element's TextTrack, which the page reads back.
 *
 * - dash.js (`tryDashJs`, issue 23): dashjs-player.html loads dash.js's UMD
 *   build (node_modules/dashjs/dist/modern/umd) from the same page server.
 *
 * Without /usr/bin/chromium the player suites skip (`describe.skipIf(!hasChromium)`)
 * with CHROMIUM_MISSING; in CI .ci/run installs it, so they run.
 */
import { existsSync } from "node:fs";
import { join, normalize } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
export const CHROMIUM_MISSING = `player tests skipped: ${CHROMIUM} not found; install it with \`npm run setup:browser\` (root: apt-get install chromium)`;

export const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--autoplay-policy=no-user-gesture-required"];

/** shaka.util.Error.Category.DRM: licence requests and key-system failures. */
export const SHAKA_CATEGORY_DRM = 6;
/** shaka.util.Error.Code.LICENSE_REQUEST_FAILED: the licence server answered an error (its status is in the error's data). */
export const SHAKA_LICENSE_REQUEST_FAILED = 6007;

const ROOT = join(import.meta.dir, "..", "..");
const SHAKA_JS = join(ROOT, "node_modules", "shaka-player", "dist", "shaka-player.compiled.js");
const PLAYER_HTML = join(import.meta.dir, "player.html");
const HLS_JS = join(ROOT, "node_modules", "hls.js", "dist", "hls.js");
const HLS_PLAYER_HTML = join(import.meta.dir, "hls-player.html");
const DASHJS = join(ROOT, "node_modules", "dashjs", "dist", "modern", "umd", "dash.all.min.js");
const DASHJS_PLAYER_HTML = join(import.meta.dir, "dashjs-player.html");

/** What dash.js made of a DASH manifest (`tryDashJs`): played past the mark with decoded frames, or its error. */
export type DashJsResult = ({ ok: true; currentTime: number; decodedFrames: number } | { ok: false; error: { code?: number; message: string } }) & { requests: string[] };

export interface ShakaError {
  code?: number;
  category?: number;
  severity?: number;
  message: string;
  /** shaka's error data as JSON (e.g. the licence response status), cut at 2000 characters. */
  data?: string;
}

export type PlayResult = { ok: true; currentTime: number; keySystem: string | null } | { ok: false; error: ShakaError };

export interface PlayOptions {
  manifestUrl: string;
  /** ClearKey licence server: drm.servers['org.w3.clearkey']. */
  licenseUrl?: string;
  /** Keys given directly (drm.clearKeys): key id hex → key hex. */
  clearKeys?: Record<string, string>;
  /** Resolve once currentTime passes this (default 2 s). */
  untilSeconds?: number;
  /** Give up after this (default 30 s). */
  timeoutMs?: number;
}

export class PlaybackError extends Error {
  constructor(readonly shaka: ShakaError) {
    super(`playback failed: ${shaka.message} (shaka code ${shaka.code ?? "-"}, category ${shaka.category ?? "-"}) ${shaka.data ?? ""}`);
  }
}

/** hls.js's ERROR event data (a fatal one) as the page reports it. */
export interface HlsError {
  /** Hls.ErrorTypes, e.g. "networkError", "mediaError". */
  type?: string;
  /** Hls.ErrorDetails, e.g. "manifestLoadError", "fragParsingError". */
  details?: string;
  fatal?: boolean;
  message: string;
  url?: string;
  /** HTTP status of a failed load. */
  status?: number;
}

export interface HlsPlayOptions {
  manifestUrl: string;
  /** Resolve once currentTime passes this (default 2 s). */
  untilSeconds?: number;
  /** Select the first subtitle track (hls.subtitleTrack = 0, shown) and wait for its cues (default true). */
  selectSubtitle?: boolean;
  /** After passing untilSeconds, how long to wait for the first cue before answering without (default 10 s). */
  cueWaitMs?: number;
  /** Give up after this (default 30 s). */
  timeoutMs?: number;
}

export interface HlsPlayed {
  /** hls.subtitleTracks after MANIFEST_PARSED: the master's SUBTITLES renditions. */
  subtitleTracks: Array<{ name: string; lang: string | undefined }>;
  currentTime: number;
  /** Cue texts of the video element's subtitle/caption TextTracks (filled when a subtitle track was selected). */
  cues?: string[];
  /** The same cues with their times on the media timeline (seconds), as hls.js placed them. */
  cueTimes?: Array<{ text: string; start: number; end: number }>;
  /** The video element's text tracks, for failure messages. */
  textTracks: Array<{ kind: string; label: string; language: string; mode: string; cues: number | null }>;
  /** hls.js's non-fatal errors (e.g. a subtitle fragment that failed to load). */
  warnings: string[];
  /** Requests the page made to other origins (the service). */
  requests: string[];
}

export type HlsPlayResult = ({ ok: true } & HlsPlayed) | { ok: false; error: HlsError; requests: string[] };

export class HlsPlaybackError extends Error {
  constructor(readonly hls: HlsError) {
    super(`HLS playback failed: ${hls.message} (hls.js ${hls.type ?? "-"}/${hls.details ?? "-"}${hls.status ? `, HTTP ${hls.status}` : ""}${hls.url ? `, ${hls.url}` : ""})`);
  }
}

export interface PlayerHarness {
  /** The page server's origin, e.g. http://127.0.0.1:PORT */
  origin: string;
  /** URL of a static file given in `files`. */
  fileUrl(path: string): string;
  /** Plays a DASH manifest with shaka-player in a fresh page; resolves with the result, never throws for a playback failure. */
  tryDash(opts: PlayOptions): Promise<PlayResult & { requests: string[] }>;
  /** Plays until currentTime passes 2 s; rejects with PlaybackError (shaka's code and category) otherwise. */
  playDash(opts: PlayOptions | string): Promise<{ currentTime: number; keySystem: string | null; requests: string[] }>;
  /** Plays an HLS master with hls.js in a fresh page; resolves with the result, never throws for a playback failure. */
  tryHls(opts: HlsPlayOptions): Promise<HlsPlayResult>;
  /** Plays a DASH manifest with dash.js (ClearKey `serverURL` = `licenseUrl`) in a fresh page; never throws for a playback failure. */
  tryDashJs(opts: PlayOptions): Promise<DashJsResult>;
  /** Plays until currentTime passes 2 s (and the first subtitle track's cues arrive); rejects with HlsPlaybackError (hls.js's fatal error details) otherwise. */
  playHls(opts: HlsPlayOptions | string): Promise<HlsPlayed>;
  /** A fresh page in the harness's Chromium, for a page of the service itself (the watch page); the caller closes it. */
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/** Starts the page server and Chromium. `files`: a directory served under /files/. */
export async function startPlayer(opts: { files?: string } = {}): Promise<PlayerHarness> {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = decodeURIComponent(new URL(req.url).pathname);
      if (path === "/" || path === "/player.html") return new Response(Bun.file(PLAYER_HTML), { headers: { "content-type": "text/html; charset=utf-8" } });
      if (path === "/shaka-player.compiled.js") return new Response(Bun.file(SHAKA_JS), { headers: { "content-type": "text/javascript" } });
      if (path === "/hls-player.html") return new Response(Bun.file(HLS_PLAYER_HTML), { headers: { "content-type": "text/html; charset=utf-8" } });
      if (path === "/hls.js") return new Response(Bun.file(HLS_JS), { headers: { "content-type": "text/javascript" } });
      if (path === "/dashjs-player.html") return new Response(Bun.file(DASHJS_PLAYER_HTML), { headers: { "content-type": "text/html; charset=utf-8" } });
      if (path === "/dash.all.min.js") return new Response(Bun.file(DASHJS), { headers: { "content-type": "text/javascript" } });
      if (opts.files && path.startsWith("/files/")) {
        const rel = normalize(path.slice("/files/".length));
        if (rel.startsWith("..")) return new Response("forbidden", { status: 403 });
        const file = Bun.file(join(opts.files, rel));
        return file.exists().then((ok) => (ok ? new Response(file) : new Response("not found", { status: 404 })));
      }
      return new Response("not found", { status: 404 });
    },
  });
  const origin = `http://127.0.0.1:${server.port}`;
  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  } catch (err) {
    server.stop(true);
    throw err;
  }

  /**
   * Opens `pagePath` in a fresh page and runs its `window[fn](args)`: the result, with the page errors added
   * to a failure's message and the requests the page made to other origins (the service). Never throws for a
   * playback failure.
   */
  async function playOnPage<R extends { ok: boolean }>(pagePath: string, fn: string, args: Record<string, unknown>): Promise<R & { requests: string[] }> {
    const page: Page = await browser.newPage();
    const pageErrors: string[] = [];
    const requests: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    page.on("request", (r) => {
      if (!r.url().startsWith(origin)) requests.push(`${r.method()} ${r.url()}`);
    });
    try {
      await page.goto(`${origin}${pagePath}`);
      const result = (await page.evaluate(({ fn, args }) => (globalThis as unknown as Record<string, (a: unknown) => unknown>)[fn]!(args), { fn, args })) as R & { error?: { message: string } };
      if (!result.ok && result.error && pageErrors.length) result.error.message += ` (page errors: ${pageErrors.join("; ")})`;
      return { ...result, requests };
    } finally {
      await page.close();
    }
  }

  const tryDash = (o: PlayOptions) =>
    playOnPage<PlayResult>("/player.html", "playDash", {
      manifestUrl: o.manifestUrl,
      licenseUrl: o.licenseUrl,
      clearKeys: o.clearKeys,
      untilSeconds: o.untilSeconds ?? 2,
      timeoutMs: o.timeoutMs ?? 30_000,
    });

  const tryHls = (o: HlsPlayOptions): Promise<HlsPlayResult> =>
    playOnPage<HlsPlayResult>("/hls-player.html", "playHls", {
      manifestUrl: o.manifestUrl,
      untilSeconds: o.untilSeconds ?? 2,
      selectSubtitle: o.selectSubtitle ?? true,
      cueWaitMs: o.cueWaitMs ?? 10_000,
      timeoutMs: o.timeoutMs ?? 30_000,
    });

  const tryDashJs = (o: PlayOptions): Promise<DashJsResult> =>
    playOnPage<DashJsResult>("/dashjs-player.html", "playDashJs", {
      manifestUrl: o.manifestUrl,
      licenseUrl: o.licenseUrl,
      untilSeconds: o.untilSeconds ?? 2,
      timeoutMs: o.timeoutMs ?? 30_000,
    });

  return {
    origin,
    newPage: () => browser.newPage(),
    tryDashJs,
    fileUrl: (path) => `${origin}/files/${path.replace(/^\//, "")}`,
    tryDash,
    async playDash(o) {
      const r = await tryDash(typeof o === "string" ? { manifestUrl: o } : o);
      if (!r.ok) throw new PlaybackError(r.error);
      return { currentTime: r.currentTime, keySystem: r.keySystem, requests: r.requests };
    },
    tryHls,
    async playHls(o) {
      const r = await tryHls(typeof o === "string" ? { manifestUrl: o } : o);
      if (!r.ok) throw new HlsPlaybackError(r.error);
      const { ok: _ok, ...played } = r;
      return played;
    },
    async close() {
      await browser.close();
      server.stop(true);
    },
  };
}
