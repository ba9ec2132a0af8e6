import type { view } from "../live/livestream-routes.ts";
import { html, type Html } from "./html.ts";
import { badge, problemBox, type Problem, timeOf } from "./section-support.ts";

/** Pure renderers of the live streams section (data → Html); live-pages.ts wires them. */

export type StreamView = ReturnType<typeof view>;

export interface StreamDraft {
  title?: string;
  latency?: string;
  scheduled_at?: string;
}

export function streamList(items: StreamView[], empty: (text: string) => Html): Html {
  if (!items.length) return empty("No live streams yet. Create one below, push to its RTMP URL from OBS or ffmpeg, and watch it here.");
  return html`<div class="table-wrap"><table id="streams">
    <thead><tr><th scope="col">Title</th><th scope="col">Status</th><th scope="col">Scheduled</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">Recording</th></tr></thead>
    <tbody>${items.map(
      (s) => html`<tr data-stream-id="${s.id}">
        <td><a href="/settings/live/${s.id}">${s.title}</a></td>
        <td>${badge(s.status)}</td>
        <td>${timeOf(s.scheduled_at)}</td>
        <td>${timeOf(s.started_at)}</td>
        <td>${timeOf(s.ended_at)}</td>
        <td>${s.recording ? html`<a href="/settings/videos/${s.recording.asset_id}">Recording</a>` : html`<span class="muted">—</span>`}</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}

/**
 * One form for both API routes: without a start time it is POST
 * /livestreams/ (ready now), with one POST /livestreams/schedule/ (booked).
 * The browser's time zone offset rides along (datetime-local has none).
 */
export function createStreamForm(opts: { csrf: Html; drm: boolean; subtitles: boolean; problem?: Problem | null; draft?: StreamDraft }): Html {
  const d = opts.draft ?? {};
  return html`<section class="panel" aria-labelledby="new-stream">
    <h2 id="new-stream">New live stream</h2>
    ${problemBox(opts.problem)}
    <form method="post" action="/settings/live" id="stream-form">
      ${opts.csrf}
      <input type="hidden" name="tz_offset" id="tz-offset" value="">
      <label for="stream-title">Title</label>
      <input id="stream-title" name="title" type="text" required maxlength="200" value="${d.title ?? ""}">
      <label for="stream-latency">Latency</label>
      <select id="stream-latency" name="latency">
        <option value="NORMAL"${d.latency === "LOW" ? "" : html` selected`}>Normal (2 s segments)</option>
        <option value="LOW"${d.latency === "LOW" ? html` selected` : ""}>Low (1 s segments)</option>
      </select>
      <label for="stream-start">Start time (optional: book the stream for later)</label>
      <input id="stream-start" name="scheduled_at" type="datetime-local" value="${d.scheduled_at ?? ""}" aria-describedby="stream-start-help">
      <span class="muted" id="stream-start-help">Empty: ready to stream now. In your browser's time zone (UTC without JavaScript).</span>
      ${opts.subtitles ? html`<label class="check"><input type="checkbox" name="subtitles"> Subtitles on the recording</label>` : ""}
      ${opts.drm ? html`<label class="check"><input type="checkbox" name="drm_enabled"> DRM on the recording</label>` : ""}
      <p><button type="submit">Create stream</button></p>
    </form>
    <script src="/settings/assets/live-schedule.js"></script>
  </section>`;
}

/** How to push: OBS (both forms the ingest accepts) and ffmpeg. */
function pushInstructions(s: StreamView, copy: (text: string, label: string) => Html): Html {
  const url = new URL(s.rtmp_url.replace(/^rtmp:/, "http:"));
  const server = `rtmp://${url.host}/live`;
  const key = `${s.stream_key}${url.search}`;
  return html`<section class="panel" aria-labelledby="push">
    <h2 id="push">Go live</h2>
    <label for="rtmp-url">RTMP URL</label>
    <input id="rtmp-url" type="text" readonly value="${s.rtmp_url}" class="secret">
    ${copy(s.rtmp_url, "Copy RTMP URL")}
    <p class="muted">Anyone with this URL can broadcast on this stream: keep it private.</p>
    <h3>OBS Studio</h3>
    <ol>
      <li>Settings → Stream.</li>
      <li>Service: <strong>Custom…</strong></li>
      <li>Server: paste the RTMP URL above (the whole URL).</li>
      <li>Stream Key: leave it <strong>blank</strong>.</li>
      <li>OK, then Start Streaming.</li>
    </ol>
    <p class="muted">Or split it: Server <code>${server}</code> and Stream Key <code>${key}</code>; both forms are accepted.</p>
    <h3>ffmpeg</h3>
    <pre><code>ffmpeg -re -i input.mp4 -c:v libx264 -preset veryfast -g 60 -c:a aac -f flv "${s.rtmp_url}"</code></pre>
  </section>`;
}

/** SRT push (issue 26): shown only to roles that may manage streams, when the server has SRT ingest. */
function srtInstructions(srtUrl: string, copy: (text: string, label: string) => Html): Html {
  return html`<section class="panel" aria-labelledby="push-srt">
    <h2 id="push-srt">Go live over SRT</h2>
    <label for="srt-url">SRT URL</label>
    <input id="srt-url" type="text" readonly value="${srtUrl}" class="secret">
    ${copy(srtUrl, "Copy SRT URL")}
    <p class="muted">MPEG-TS with H.264 and AAC. Anyone with this URL can broadcast on this stream: keep it private.</p>
    <h3>OBS Studio (28+)</h3>
    <ol>
      <li>Settings → Stream, Service: <strong>Custom…</strong></li>
      <li>Server: paste the SRT URL above; Stream Key: leave it <strong>blank</strong>.</li>
    </ol>
    <h3>ffmpeg</h3>
    <pre><code>ffmpeg -re -i input.mp4 -c:v libx264 -preset veryfast -g 60 -c:a aac -f mpegts "${srtUrl}"</code></pre>
  </section>`;
}

function preview(s: StreamView): Html {
  if (s.status === "ENDED" || s.status === "ERROR") return html``;
  // hls.js served by the service (/assets/): the preview attaches once the stream is LIVE (the page polls its status).
  return html`<section class="panel" aria-labelledby="preview">
    <h2 id="preview">Preview</h2>
    <video id="preview-player" controls playsinline muted autoplay aria-label="Live preview of ${s.title}" data-src="${s.hls_url}" data-stream-id="${s.id}"></video>
    <p id="preview-state" role="status" aria-live="polite">${s.status === "LIVE" ? "Loading the live picture…" : "Waiting for the encoder: the preview starts when the stream is live."}</p>
    <p class="muted">HLS: <code>${s.hls_url}</code></p>
  </section>
  <script src="/assets/hls.min.js"></script>`;
}

export function streamPage(s: StreamView, opts: { canManage: boolean; csrf: Html; copy: (text: string, label: string) => Html; srtUrl?: string | null; outputs?: Html }): Html {
  const settled = s.status === "ENDED" || s.status === "ERROR";
  const recording = s.recording
    ? html`<p><a href="/settings/videos/${s.recording.asset_id}" id="recording-link">Recording</a> ${s.recording.transcoding ? html`<span class="muted">(transcoding)</span>` : ""}${
        s.recording.resolution ? html` <span class="muted">${s.recording.resolution}</span>` : ""
      }</p>`
    : settled
      ? html`<p class="muted">No recording: nothing was broadcast.</p>`
      : html`<p class="muted">The recording appears here when the stream ends.</p>`;
  return html`<p><a href="/settings/live">← All live streams</a></p>
  <div id="stream" data-status="${s.status}" data-recording="${s.recording?.asset_id ?? ""}" data-status-url="/settings/live/${s.id}/status.json">
  ${s.error ? html`<div class="flash flash-error" role="alert"><strong>${s.error.code}</strong>: ${s.error.message}</div>` : ""}
  <dl class="facts">
    <dt>Status</dt><dd id="stream-status">${badge(s.status)}</dd>
    <dt>ID</dt><dd><code>${s.id}</code></dd>
    <dt>Latency</dt><dd>${s.latency}</dd>
    <dt>Playback policy</dt><dd id="playback-policy">${s.playback_policy}${s.playback_policy === "signed" ? html` <span class="muted">(hls_url and the recording need <code>?token=</code>)</span>` : ""}</dd>
    ${s.playback_restriction_id ? html`<dt>Playback restriction</dt><dd><a href="/settings/restrictions"><code>${s.playback_restriction_id}</code></a></dd>` : ""}
    <dt>Scheduled</dt><dd>${timeOf(s.scheduled_at)}</dd>
    <dt>Started</dt><dd>${timeOf(s.started_at)}</dd>
    <dt>Ended</dt><dd>${timeOf(s.ended_at)}</dd>
    ${s.duration_seconds !== null ? html`<dt>Duration</dt><dd>${Math.round(s.duration_seconds)} s</dd>` : ""}
  </dl>
  <section class="panel" aria-labelledby="recording"><h2 id="recording">Recording</h2>${recording}</section>
  ${settled ? "" : opts.canManage ? pushInstructions(s, opts.copy) : html`<p class="muted" id="push-hidden">The push URL and stream key are shown to roles that manage live streams (anyone holding them can broadcast).</p>`}
  ${!settled && opts.canManage && opts.srtUrl ? srtInstructions(opts.srtUrl, opts.copy) : ""}
  ${preview(s)}
  ${opts.outputs ?? ""}
  ${
    opts.canManage && !settled
      ? html`<form method="post" action="/settings/live/${s.id}/end" data-confirm="End ${s.title}? The encoder is disconnected and the recording is made.">
          ${opts.csrf}<button type="submit" class="danger">End stream</button>
        </form>`
      : ""
  }
  </div>
  <script src="/settings/assets/live-stream.js"></script>`;
}
