/**
 * `trackPlayback`: viewer analytics from the player (issue 28). No imports:
 * the same file works from a bundler (`import { trackPlayback } from
 * "@vidlive/client"`) and from a plain `<script type="module">` (the service
 * serves it as `/assets/vidlive-track.js`). Native `<video>`, hls.js and
 * shaka-player.
 *
 * It sends batched events to `POST {BASE_URL}/beacons/` as `text/plain`
 * JSON (no preflight): `viewstart` at once, player events as they happen,
 * a `heartbeat` every 10 s, and `viewend` when the page is hidden for good
 * (`pagehide`) or `stop()` is called, with `navigator.sendBeacon` so the last
 * batch survives the page.
 */

/** The hls.js instance, as far as tracking reads it. */
export interface HlsLike {
  on(event: string, listener: (event: string, data: any) => void): void;
  off?(event: string, listener: (event: string, data: any) => void): void;
  levels?: Array<{ height?: number; bitrate?: number }>;
}

/** The shaka-player instance, as far as tracking reads it. */
export interface ShakaLike {
  addEventListener(type: string, listener: (event: any) => void): void;
  removeEventListener?(type: string, listener: (event: any) => void): void;
  getVariantTracks(): Array<{ active: boolean; height?: number | null; bandwidth?: number }>;
}

export interface TrackPlaybackOptions {
  /** Exactly one of videoId and streamId. */
  videoId?: string;
  streamId?: string;
  hls?: HlsLike;
  shaka?: ShakaLike;
  /** The beacon URL; default `{BASE_URL}/beacons/` when this file is the service's `{BASE_URL}/assets/vidlive-track.js`. */
  endpoint?: string;
  /** A signed asset's playback token (the JWT of its media URLs). */
  token?: string;
  /** Default 10 s. */
  heartbeatMs?: number;
  /** How long events wait to be sent together; default 5 s. */
  flushMs?: number;
}

export interface PlaybackTracker {
  readonly viewId: string;
  /** Sends `viewend` and stops listening. */
  stop(): void;
}

type Event = Record<string, string | number>;

const MAX_BATCH = 50;

function randomId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The browser's random viewer id, kept in localStorage when there is one (not a person: a browser profile). */
function viewerId(): string {
  try {
    const stored = localStorage.getItem("vidlive_viewer_id");
    if (stored && /^[a-f0-9]{32}$/.test(stored)) return stored;
    const id = randomId();
    localStorage.setItem("vidlive_viewer_id", id);
    return id;
  } catch {
    return randomId();
  }
}

function defaultEndpoint(): string {
  try {
    return new URL("../beacons/", import.meta.url).href;
  } catch {
    return "/beacons/";
  }
}

export function trackPlayback(video: HTMLVideoElement, opts: TrackPlaybackOptions): PlaybackTracker {
  if (!opts.videoId === !opts.streamId) throw new TypeError("trackPlayback: give exactly one of videoId and streamId");
  const endpoint = opts.endpoint ?? defaultEndpoint();
  const asset: Event = opts.videoId ? { video_id: opts.videoId } : { stream_id: opts.streamId! };
  const base: Event = { ...asset, view_id: randomId(), viewer_id: viewerId(), ...(opts.token ? { token: opts.token } : {}) };
  const startedAt = Date.now();
  let queue: Event[] = [];
  let played = false;
  let ended = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let lastHeight = -1;
  let lastBitrate = -1;
  const cleanups: Array<() => void> = [];

  function send(final: boolean): void {
    if (timer) clearTimeout(timer);
    timer = null;
    while (queue.length > 0) {
      const body = JSON.stringify(queue.splice(0, MAX_BATCH));
      const blob = new Blob([body], { type: "text/plain" });
      // At page exit only sendBeacon is reliable; otherwise fetch with keepalive (same body, same content type).
      if (final && navigator.sendBeacon?.(endpoint, blob)) continue;
      fetch(endpoint, { method: "POST", body, headers: { "content-type": "text/plain" }, keepalive: body.length < 60_000, credentials: "omit", mode: "cors" }).catch(() => undefined);
    }
  }

  function emit(type: string, extra: Event = {}): void {
    if (ended) return;
    const t = Date.now();
    queue.push({ ...base, type, t, player_time: Number.isFinite(video.currentTime) ? Math.max(0, video.currentTime) : 0, ...extra });
    if (type === "viewend" || type === "ended" || queue.length >= MAX_BATCH) send(type === "viewend");
    else timer ??= setTimeout(() => send(false), opts.flushMs ?? 5_000);
  }

  function rendition(height: number | null | undefined, bitrate: number | null | undefined): void {
    const h = Math.max(0, Math.round(height ?? 0));
    const b = Math.max(0, Math.round(bitrate ?? 0));
    if (h === lastHeight && b === lastBitrate) return;
    lastHeight = h;
    lastBitrate = b;
    emit("rendition_change", { height: h, bitrate: b });
  }

  const on = (target: EventTarget, type: string, fn: (e: any) => void) => {
    target.addEventListener(type, fn);
    cleanups.push(() => target.removeEventListener(type, fn));
  };

  on(video, "playing", () => {
    if (!played) {
      played = true;
      emit("playing", { startup_ms: Math.min(600_000, Date.now() - startedAt) });
    } else emit("playing");
  });
  for (const type of ["pause", "seeking", "seeked", "waiting"]) on(video, type, () => emit(type));
  on(video, "ended", () => emit("ended"));
  on(video, "error", () => emit("error", { code: video.error?.code ?? 0 }));

  if (opts.hls) {
    const hls = opts.hls;
    const switched = (_e: string, data: any) => {
      const level = hls.levels?.[data?.level];
      if (level) rendition(level.height, level.bitrate);
    };
    const failed = (_e: string, data: any) => {
      if (data?.fatal) emit("error", { code: String(data.details ?? "hls").slice(0, 64) });
    };
    hls.on("hlsLevelSwitched", switched);
    hls.on("hlsError", failed);
    cleanups.push(() => {
      hls.off?.("hlsLevelSwitched", switched);
      hls.off?.("hlsError", failed);
    });
  }
  if (opts.shaka) {
    const shaka = opts.shaka;
    const changed = () => {
      const active = shaka.getVariantTracks().find((t) => t.active);
      if (active) rendition(active.height, active.bandwidth);
    };
    const failed = (e: any) => emit("error", { code: String(e?.detail?.code ?? "shaka").slice(0, 64) });
    for (const type of ["adaptation", "variantchanged", "trackschanged"]) {
      shaka.addEventListener(type, changed);
      cleanups.push(() => shaka.removeEventListener?.(type, changed));
    }
    shaka.addEventListener("error", failed);
    cleanups.push(() => shaka.removeEventListener?.("error", failed));
  }
  if (!opts.hls && !opts.shaka) on(video, "resize", () => video.videoHeight && rendition(video.videoHeight, 0));

  const heartbeat = setInterval(() => emit("heartbeat"), opts.heartbeatMs ?? 10_000);
  cleanups.push(() => clearInterval(heartbeat));
  // Hidden: send what waits (the page may never come back); gone: the view ends.
  on(document, "visibilitychange", () => document.visibilityState === "hidden" && send(true));
  on(window, "pagehide", () => stop());

  function stop(): void {
    if (ended) return;
    emit("viewend");
    ended = true;
    for (const c of cleanups.splice(0)) c();
  }

  emit("viewstart");
  return { viewId: base.view_id as string, stop };
}
