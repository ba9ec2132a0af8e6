import { html, type Html } from "./html.ts";
import { badge, bytesOf, timeOf } from "./section-support.ts";
import { durationOf, type VideoView } from "./videos-view.ts";

/** One video's page (data → Html): player, facts, renditions, downloads, transcript, summary, delete. */

function player(v: VideoView["video"]): Html {
  // Issue 29 item 1: a video playable while it transcodes shows its player beside the progress.
  const early = v.status === "TRANSCODING" && v.playable && v.url !== null;
  if (v.status === "TRANSCODING") {
    return html`<div class="panel" id="video-progress" data-url="/settings/videos/${v.id}/progress.json">
      <p id="video-playable">${early ? html`<strong>Playable</strong> while transcoding: the player below plays what is encoded so far.` : "Transcoding… the player appears as soon as the video is playable."}</p>
      <progress max="100" value="${v.progress}" aria-label="Transcoding progress">${v.progress}%</progress> <span class="pct">${v.progress}%</span>
    </div>${early && !v.drm ? playerElement(v) : ""}`;
  }
  if (v.status !== "COMPLETED" || !v.url) return html``;
  return playerElement(v);
}

function playerElement(v: VideoView["video"]): Html {
  // Players are served by the service (/assets/, static-assets.ts): nothing from a CDN.
  const drm = v.drm_license_url !== null;
  return html`<div class="player">
    <video id="player" controls playsinline muted preload="metadata" aria-label="${v.title}" data-src="${v.url}" data-video-id="${v.id}"${drm ? html` data-license-url="${v.drm_license_url}"` : ""}></video>
    <p id="player-error" class="error" role="alert" hidden></p>
    ${drm ? html`<p class="muted">DRM: ClearKey, played with shaka-player; the licence token on this page is valid for a limited time.</p>` : ""}
  </div>
  <script src="/assets/${drm ? "shaka-player.compiled.js" : "hls.min.js"}"></script>`;
}

function renditions(view: VideoView): Html {
  if (!view.renditions.length) return html``;
  return html`<section class="panel" aria-labelledby="renditions">
    <h2 id="renditions">Renditions and downloads</h2>
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Quality</th><th scope="col">Playlist</th><th scope="col">Download</th></tr></thead>
      <tbody>${view.renditions.map(
        (r) => html`<tr>
          <td>${r.quality}</td>
          <td><a href="${r.url}">${r.quality} playlist</a></td>
          <td>${
            r.download_url
              ? html`<a href="${r.download_url}" download>Download ${r.quality}</a> <span class="muted">(${bytesOf(r.download_size_bytes)})</span>${
                  r.download_password ? html` <span class="muted">password <code>${r.download_password}</code></span>` : ""
                }`
              : html`<span class="muted">not offered</span>`
          }</td>
        </tr>`,
      )}</tbody>
    </table></div>
  </section>`;
}

/** Issue 27 item 4: each static rendition asked for, its status, its file once ready (or why it is not made). */
function staticRenditions(v: VideoView["video"]): Html {
  if (!v.static_renditions.length) return html``;
  return html`<section class="panel" aria-labelledby="static-renditions">
    <h2 id="static-renditions">Static renditions</h2>
    <p class="muted">MP4 (M4A for audio-only) files made from the renditions by stream copy; served like the playlists${v.playback_policy === "signed" ? html` (each needs <code>?token=</code>)` : ""}.</p>
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">File</th></tr></thead>
      <tbody>${v.static_renditions.map(
        (r) => html`<tr data-static="${r.name}">
          <td>${r.name}</td>
          <td>${r.status}</td>
          <td>${
            r.url
              ? html`<a href="${r.url}">${r.url.split("/").pop() ?? r.name}</a> <span class="muted">(${bytesOf(r.bytes)})</span>`
              : r.error
                ? html`<span class="muted">${r.error.message}</span>`
                : html`<span class="muted">being made</span>`
          }</td>
        </tr>`,
      )}</tbody>
    </table></div>
  </section>`;
}

function texts(v: VideoView["video"]): Html {
  if (!v.transcript_url && !v.summary_url) return html``;
  return html`<section class="panel" aria-labelledby="transcript">
    <h2 id="transcript">Transcript</h2>
    <p class="muted">Machine-made from the speech.</p>
    ${
      v.summary_url
        ? html`<h3>Summary</h3><blockquote id="summary-text" data-text-src="${v.summary_url}" aria-live="polite">Loading…</blockquote><p><a href="${v.summary_url}">summary.txt</a></p>`
        : ""
    }
    ${
      v.transcript_url
        ? html`<details><summary>Full transcript (WebVTT)</summary><pre id="transcript-text" data-text-src="${v.transcript_url}">Loading…</pre></details><p><a href="${v.transcript_url}">transcript.vtt</a></p>`
        : ""
    }
  </section>`;
}

/** Issue 27: a clip of this video (as POST /videos/{id}/clips/); the new clip's page opens once it is registered. */
function clipForm(v: VideoView["video"], csrf: Html): Html {
  return html`<section class="panel" aria-labelledby="clip">
    <h2 id="clip">Clip</h2>
    <form method="post" action="/settings/videos/${v.id}/clip" class="stack">
      ${csrf}
      <label>Start (seconds) <input name="start_time" type="number" min="0" step="0.001" required></label>
      <label>End (seconds) <input name="end_time" type="number" min="0" step="0.001" required${v.duration_seconds !== null ? html` placeholder="at most ${v.duration_seconds}"` : ""}></label>
      <label>Title <input name="title" maxlength="200" placeholder="${v.title} (start-end s)"></label>
      <button type="submit">Create clip</button> <span class="muted">A new video, cut to the frame and transcoded like any other.</span>
    </form>
  </section>`;
}

export function videoPage(view: VideoView, opts: { canManage: boolean; csrf: Html }): Html {
  const v = view.video;
  const stream = view.stream;
  return html`<p><a href="/settings/videos">← All videos</a></p>
  ${player(v)}
  ${view.error ? html`<div class="flash flash-error" role="alert"><strong>${view.error.code}</strong>: ${view.error.message}</div>` : ""}
  <dl class="facts">
    <dt>Status</dt><dd>${badge(v.status)}</dd>
    <dt>ID</dt><dd><code>${v.id}</code></dd>
    <dt>Kind</dt><dd>${v.kind === "UPLOAD" ? "Upload" : "Live recording"}${stream ? html` of <a href="/settings/live/${stream.id}">stream ${stream.id}</a>` : ""}</dd>
    <dt>Duration</dt><dd>${durationOf(v.duration_seconds)}</dd>
    <dt>Size</dt><dd>${bytesOf(v.size_bytes)}</dd>
    <dt>Created</dt><dd>${timeOf(v.created_at)}</dd>
    <dt>DRM</dt><dd>${v.drm ? "on" : "off"}</dd>
    <dt>Playback policy</dt><dd id="playback-policy">${v.playback_policy}${v.playback_policy === "signed" ? html` <span class="muted">(every media URL needs <code>?token=</code> signed with one of the <a href="/settings/signing-keys">signing keys</a>; this page's player has none)</span>` : ""}</dd>
    ${v.playback_restriction_id ? html`<dt>Playback restriction</dt><dd><a href="/settings/restrictions"><code>${v.playback_restriction_id}</code></a></dd>` : ""}
    ${v.url ? html`<dt>Playback URL</dt><dd><code>${v.url}</code></dd>` : ""}
    ${v.source_url ? html`<dt>Source</dt><dd><code>${v.source_url}</code></dd>` : ""}
    ${v.source_video_id ? html`<dt>Clip of</dt><dd id="clip-of"><a href="/settings/videos/${v.source_video_id}">video ${v.source_video_id}</a></dd>` : ""}
    ${v.source_stream_id ? html`<dt>Clip of</dt><dd id="clip-of"><a href="/settings/live/${v.source_stream_id}">stream ${v.source_stream_id}</a></dd>` : ""}
  </dl>
  ${renditions(view)}
  ${staticRenditions(v)}
  ${texts(v)}
  ${opts.canManage && v.status === "COMPLETED" ? clipForm(v, opts.csrf) : ""}
  ${
    opts.canManage && v.status === "ERROR"
      ? html`<form method="post" action="/settings/videos/${v.id}/retry">
          ${opts.csrf}<button type="submit">Retry</button> <span class="muted">Same source, a new attempt; VIDEO_TRANSCODING_* events fire again.</span>
        </form>`
      : ""
  }
  ${
    opts.canManage
      ? html`<form method="post" action="/settings/videos/${v.id}/delete" data-confirm="Delete the video ${v.title} and all its files?">
          ${opts.csrf}<button type="submit" class="danger">Delete video</button>
        </form>`
      : ""
  }
  <script src="/settings/assets/video-page.js"></script>`;
}
