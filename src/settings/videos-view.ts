import type { videoResource } from "../videos/video-resource.ts";
import type { PlaybackPolicy } from "../orgs/org-settings.ts";
import { policySelect } from "./playback-fields.ts";
import { html, type Html } from "./html.ts";
import { badge, problemBox, type Problem, timeOf } from "./section-support.ts";

/** Pure renderers of the videos list (data → Html); videos-pages.ts wires them, video-page-view.ts renders one video. */

export type VideoView = ReturnType<typeof videoResource>;

export interface UploadOptions {
  canManage: boolean;
  csrf: Html;
  /** The same token, for the upload script's requests (session-guard.ts reads `_csrf`). */
  csrfToken: string;
  /** The organization may ask for DRM (its feature switch). */
  drm: boolean;
  /** The server has a speech-to-text engine. */
  subtitles: boolean;
  /** The organization's default playback policy (issue 27), preselected. */
  policy: PlaybackPolicy;
  problem?: Problem | null;
  draft?: { source_url?: string; title?: string };
}

export function progressCell(v: VideoView["video"]): Html {
  if (v.status !== "TRANSCODING") return html`<span class="muted">${v.status === "COMPLETED" ? "100%" : "—"}</span>`;
  return html`<progress max="100" value="${v.progress}" aria-label="Transcoding progress of ${v.title}">${v.progress}%</progress> <span class="pct">${v.progress}%</span>`;
}

export function durationOf(seconds: number | null): string {
  if (seconds === null) return "—";
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/**
 * A row's picture (issue 27): the image URL of a COMPLETED public video, cut on first view and cached; a signed one
 * needs a token the screen does not hold, so it says so.
 */
function thumbnailCell(v: VideoView["video"]): Html {
  if (v.status !== "COMPLETED" || !v.duration_seconds) return html`<span class="muted">—</span>`;
  if (v.playback_policy === "signed") return html`<span class="muted">signed</span>`;
  return html`<img class="thumb" src="/image/${v.id}/thumbnail.jpg?width=160" width="80" height="45" loading="lazy" alt="Thumbnail of ${v.title}">`;
}

export function videoList(items: VideoView[], empty: (text: string) => Html): Html {
  if (!items.length) return empty("No videos yet. Upload a file below, or add one from a URL; it is transcoded to HLS and listed here.");
  return html`<p class="muted">Newest first; progress updates by itself while a video transcodes.</p>
  <div class="table-wrap"><table id="videos" data-progress-url="/settings/videos/progress.json">
    <thead><tr><th scope="col">Thumbnail</th><th scope="col">Title</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Kind</th><th scope="col">Duration</th><th scope="col">Created</th></tr></thead>
    <tbody>${items.map(
      ({ video: v }) => html`<tr data-video-id="${v.id}" data-status="${v.status}">
        <td class="thumb-cell">${thumbnailCell(v)}</td>
        <td><a href="/settings/videos/${v.id}">${v.title}</a></td>
        <td class="status">${badge(v.status)}</td>
        <td class="progress">${progressCell(v)}</td>
        <td>${v.kind === "UPLOAD" ? "Upload" : "Live recording"}</td>
        <td>${durationOf(v.duration_seconds)}</td>
        <td>${timeOf(v.created_at)}</td>
      </tr>`,
    )}</tbody>
  </table></div>
  <script src="/settings/assets/videos-list.js"></script>`;
}

function optionBoxes(o: UploadOptions, prefix: string): Html {
  return html`${policySelect(`${prefix}-policy`, o.policy)}${
    o.subtitles
      ? html`<label class="check"><input type="checkbox" name="subtitles" id="${prefix}-subtitles"> Subtitles (machine transcript and summary)</label>`
      : html`<p class="muted">Subtitles: this server has no speech-to-text engine.</p>`
  }${o.drm ? html`<label class="check"><input type="checkbox" name="drm_enabled" id="${prefix}-drm"> DRM (ClearKey, played with shaka)</label>` : ""}`;
}

/**
 * Two ways in, as the API has: a file from this computer (the presigned
 * upload: the script asks for an upload URL, PUTs the file with progress, then
 * registers its source_url) and a URL the service fetches (a plain form).
 */
export function addVideoForms(o: UploadOptions): Html {
  if (!o.canManage) return html`<p class="muted">Your role can watch videos but not add or delete them.</p>`;
  return html`<section class="panel" aria-labelledby="upload-heading">
    <h2 id="upload-heading">Upload a file</h2>
    <form id="upload-form" data-upload-url="/settings/videos/upload-url" data-register-url="/settings/videos" data-csrf="${o.csrfToken}">
      <label for="upload-file">Video file</label>
      <input id="upload-file" name="file" type="file" accept="video/*,audio/*,.mkv,.mov,.mp4,.flv,.ts" required>
      <label for="upload-title">Title (optional)</label>
      <input id="upload-title" name="title" type="text" maxlength="200">
      ${optionBoxes(o, "upload")}
      <p><button type="submit" id="upload-button">Upload</button></p>
      <p><progress id="upload-progress" max="100" value="0" hidden aria-label="Upload progress"></progress> <span id="upload-status" role="status" aria-live="polite"></span></p>
      <noscript><p class="muted">Uploading a file needs JavaScript; add a video from a URL below instead.</p></noscript>
    </form>
    <script src="/settings/assets/videos-upload.js"></script>
  </section>
  <section class="panel" aria-labelledby="url-heading">
    <h2 id="url-heading">Add from a URL</h2>
    ${problemBox(o.problem)}
    <form method="post" action="/settings/videos">
      ${o.csrf}
      <label for="source-url">Source URL</label>
      <input id="source-url" name="source_url" type="url" required placeholder="https://example.com/video.mp4" value="${o.draft?.source_url ?? ""}">
      <label for="url-title">Title (optional)</label>
      <input id="url-title" name="title" type="text" maxlength="200" value="${o.draft?.title ?? ""}">
      ${optionBoxes(o, "url")}
      <p><button type="submit">Add video</button></p>
    </form>
  </section>`;
}
