/**
 * The watch page's HTML, its stylesheet and its script. No inline script or
 * style (the CSP allows only same-origin files); the page hands its settings
 * to the script as data attributes. Every URL in it is a path on this
 * service, so it loads nothing from elsewhere.
 */

export interface WatchPageView {
  title: string;
  /** Paths (no origin): the page works under whatever host it was reached by. */
  manifest: string;
  kind: "hls" | "dash";
  poster: string | null;
  storyboard: string | null;
  subtitles: string | null;
  /** A DRM video: the licence path with a valid token, or null (then the page asks for one). */
  licence: string | null;
  autoplay: boolean;
  muted: boolean;
  /** Path prefix of BASE_URL ('' at the root). */
  prefix: string;
  /** The video's id, for viewer analytics (issue 28: the page sends beacons through the SDK's trackPlayback). */
  videoId: string;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const attr = (name: string, value: string | null | boolean) => (value === null || value === false ? "" : value === true ? ` ${name}` : ` ${name}="${escapeHtml(value)}"`);

export function watchPageHtml(v: WatchPageView): string {
  const script = v.kind === "dash" ? "/assets/shaka-player.compiled.js" : "/assets/hls.min.js";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(v.title)}</title>
<link rel="stylesheet" href="${v.prefix}/watch/watch.css">
</head>
<body>
<main id="player"${attr("data-manifest", v.manifest)}${attr("data-kind", v.kind)}${attr("data-storyboard", v.storyboard)}${attr("data-licence", v.licence)}${attr("data-autoplay", v.autoplay ? "1" : null)}${attr("data-video", v.videoId)}${attr("data-track", `${v.prefix}/assets/vidlive-track.js`)}>
<h1>${escapeHtml(v.title)}</h1>
<video id="video" controls playsinline preload="metadata"${attr("poster", v.poster)}${attr("muted", v.muted)}${attr("autoplay", v.autoplay)}>${
    v.subtitles ? `<track kind="subtitles" srclang="en" label="English"${attr("src", v.subtitles)}>` : ""
  }</video>
<div id="scrub" hidden><div id="played"></div><div id="preview" hidden><span id="preview-time"></span></div></div>
<p id="message" hidden></p>
</main>
<script src="${v.prefix}${script}"></script>
<script src="${v.prefix}/watch/watch.js"></script>
</body>
</html>
`;
}

export function notFoundPageHtml(): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Video not found</title></head>
<body><h1>Video not found</h1><p>This video does not exist, was deleted, or is not ready yet.</p></body>
</html>
`;
}

/** A page the playback gate refused (issue 27): the reasons it named (`token`, `referrer`, `playback_restriction_id`). */
export function refusedPageHtml(details: Record<string, string>): string {
  const reasons = Object.entries(details).map(([k, v]) => `<li><code>${escapeHtml(k)}</code> ${escapeHtml(v)}</li>`);
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Playback refused</title></head>
<body><h1>Playback refused</h1><p>This video needs a valid playback token (<code>?token=</code>) or an allowed referring site.</p><ul id="reasons">${reasons.join("")}</ul></body>
</html>
`;
}

export const WATCH_CSS = `html, body { margin: 0; height: 100%; background: #000; color: #eee; font: 14px system-ui, sans-serif; }
main { display: flex; flex-direction: column; height: 100%; position: relative; }
h1 { font-size: 14px; font-weight: 500; margin: 0; padding: 6px 10px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
video { flex: 1; width: 100%; min-height: 0; background: #000; }
#scrub { position: relative; height: 14px; background: #333; cursor: pointer; }
#played { position: absolute; left: 0; top: 0; bottom: 0; width: 0; background: #3ea6ff; pointer-events: none; }
#preview { position: absolute; bottom: 18px; border: 2px solid #fff; background-repeat: no-repeat; background-color: #000; pointer-events: none; }
#preview-time { position: absolute; bottom: 0; left: 0; right: 0; text-align: center; font-size: 12px; background: rgba(0, 0, 0, 0.6); }
#message { margin: 0; padding: 8px 10px; background: #402; }
[hidden] { display: none !important; }
`;

/**
 * Plays the manifest (hls.js, or shaka with the ClearKey licence for DRM), shows storyboard tiles over the scrub bar,
 * and counts the view: the SDK's trackPlayback, imported from this service's /assets/vidlive-track.js (beacons to
 * its /beacons/; the view ends at pagehide, when the viewer leaves or closes the page).
 */
export const WATCH_JS = `"use strict";
(() => {
  const root = document.getElementById("player");
  const video = document.getElementById("video");
  const d = root.dataset;
  const say = (text) => {
    const p = document.getElementById("message");
    p.textContent = text;
    p.hidden = false;
  };
  // Analytics never stand in the way of playback: a failed import only means the view is not counted.
  const track = (player) =>
    import(d.track)
      .then((m) => {
        window.watchTracker = m.trackPlayback(video, Object.assign({ videoId: d.video }, player));
      })
      .catch(() => undefined);

  async function play() {
    if (d.kind === "dash") {
      if (!d.licence) return say("This video is DRM-protected: open this page with ?drm_token= (from POST /videos/{id}/drm-token/).");
      shaka.polyfill.installAll();
      if (!shaka.Player.isBrowserSupported()) return say("This browser cannot play this video.");
      const player = new shaka.Player();
      window.watchPlayer = player;
      await player.attach(video);
      track({ shaka: player });
      player.configure({ drm: { servers: { "org.w3.clearkey": d.licence } } });
      player.addEventListener("error", (e) => say("Playback failed (" + (e.detail && e.detail.code) + ")."));
      await player.load(d.manifest);
      // shaka 5 has no setTextTrackVisibility: selecting a text track (the transcript's, when there is one) shows it.
      const text = player.getTextTracks()[0];
      if (text) player.selectTextTrack(text);
    } else if (window.Hls && Hls.isSupported()) {
      // Subtitles come from the page's <track> (the transcript), not from the playlist: one track, not two.
      const hls = new Hls({ enableWebVTT: false });
      window.watchPlayer = hls;
      track({ hls });
      hls.on(Hls.Events.ERROR, (_e, data) => data.fatal && say("Playback failed (" + data.details + ")."));
      hls.loadSource(d.manifest);
      hls.attachMedia(video);
    } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
      video.src = d.manifest;
      track({});
    } else {
      return say("This browser cannot play HLS.");
    }
    if (d.autoplay) video.play().catch(() => undefined);
  }

  const seconds = (h, m, s, ms) => Number(h) * 3600 + Number(m) * 60 + Number(s) + Number(ms) / 1000;
  const clock = (t) => {
    const s = Math.max(0, Math.floor(t));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  };

  async function storyboard() {
    const bar = document.getElementById("scrub");
    const played = document.getElementById("played");
    bar.hidden = false;
    const duration = () => (Number.isFinite(video.duration) && video.duration > 0 ? video.duration : cues.length ? cues[cues.length - 1].end : 0);
    video.addEventListener("timeupdate", () => {
      played.style.width = (duration() ? (100 * video.currentTime) / duration() : 0) + "%";
    });
    let cues = [];
    // A signed video's sprite needs the storyboard's token too (a relative URL drops the VTT's query).
    const sprite = (rel) => {
      const base = new URL(d.storyboard, location.href);
      const url = new URL(rel, base);
      const token = base.searchParams.get("token");
      if (token && !url.searchParams.has("token")) url.searchParams.set("token", token);
      return url.href;
    };
    if (d.storyboard) {
      const res = await fetch(d.storyboard);
      const text = res.ok ? await res.text() : "";
      const re = /(\\d+):(\\d{2}):(\\d{2})\\.(\\d{3})\\s+-->\\s+(\\d+):(\\d{2}):(\\d{2})\\.(\\d{3})[^\\n]*\\n([^#\\n]+)#xywh=(\\d+),(\\d+),(\\d+),(\\d+)/g;
      for (const m of text.matchAll(re)) {
        cues.push({
          start: seconds(m[1], m[2], m[3], m[4]),
          end: seconds(m[5], m[6], m[7], m[8]),
          src: sprite(m[9].trim()),
          x: +m[10], y: +m[11], w: +m[12], h: +m[13],
        });
      }
    }
    const preview = document.getElementById("preview");
    const label = document.getElementById("preview-time");
    const at = (e) => {
      const r = bar.getBoundingClientRect();
      return { r, t: Math.min(1, Math.max(0, (e.clientX - r.left) / r.width)) * duration() };
    };
    bar.addEventListener("mousemove", (e) => {
      const { r, t } = at(e);
      const cue = cues.find((c) => t >= c.start && t < c.end) || cues[cues.length - 1];
      if (!cue) return;
      preview.style.backgroundImage = 'url("' + cue.src + '")';
      preview.style.backgroundPosition = -cue.x + "px " + -cue.y + "px";
      preview.style.width = cue.w + "px";
      preview.style.height = cue.h + "px";
      preview.style.left = Math.min(Math.max(0, e.clientX - r.left - cue.w / 2), Math.max(0, r.width - cue.w)) + "px";
      label.textContent = clock(t);
      preview.hidden = false;
    });
    bar.addEventListener("mouseleave", () => {
      preview.hidden = true;
    });
    bar.addEventListener("click", (e) => {
      const { t } = at(e);
      if (duration()) video.currentTime = t;
    });
  }

  play().catch((e) => say("Playback failed: " + (e && e.message ? e.message : e)));
  storyboard().catch(() => undefined);
})();
`;
