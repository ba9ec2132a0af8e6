import { hasPackager } from "../../media/drm/index.ts";
import { type OrgSettings, STANDARD_RUNGS } from "../orgs/org-settings.ts";
import { applySettingsChange, type SettingsChange, SettingsChangeRefused } from "../orgs/settings-change.ts";
import type { Member } from "./types.ts";
import { type Html, html } from "./html.ts";
import { csrfField } from "./page.ts";

/**
 * The part of the organization's settings the organization decides for itself
 * (owner and admin): the transcoding ladder, downloads and the DRM switch.
 * Limits and API permissions stay the operator's (`cli org set`).
 *
 * The form is turned into a `SettingsChange` and goes through the same
 * domain function as `cli org set` (src/orgs/settings-change.ts), so the
 * screen refuses what the CLI refuses, with its message.
 */

type FormBody = Record<string, unknown> | undefined;

const list = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : v === undefined || v === null || v === "" ? [] : [String(v)]);
const RUNG_NAMES = Object.keys(STANDARD_RUNGS);

/** The DRM switch exists only where this server can package DRM (Shaka Packager present; media/drm). */
export const drmSwitchAvailable = (): boolean => hasPackager();

/** The change the form asks for, or the message to show (nothing saved). */
export function organizationChange(current: OrgSettings, body: FormBody): { change: SettingsChange } | { error: string } {
  const b = body ?? {};
  const change: SettingsChange = {};
  // Transcoding on/off is the operator's switch (`--transcoding`): the ladder is edited only while it is on.
  if (current.transcoding) {
    const ladder = list(b.ladder);
    if (ladder.length === 0) return { error: "Choose at least one rung for the transcoding ladder (cli org set: --ladder needs at least one rung)." };
    change.ladder = ladder.join(",");
  }
  const mode = String(b.downloads ?? "");
  if (mode === "none" || mode === "top") change.downloads = mode;
  else if (mode === "rungs") {
    const rungs = list(b.download_rungs);
    if (rungs.length === 0) return { error: "Choose at least one rendition to download, or choose None." };
    change.downloads = rungs.join(",");
  } else return { error: `Downloads: choose None, Top rendition or Named renditions (got "${mode}").` };
  change.downloadFormat = String(b.download_format ?? "");
  if (b.drm_shown !== undefined) {
    if (!drmSwitchAvailable()) return { error: "DRM packaging is not available on this server (no Shaka Packager)." };
    change.drm = b.drm === undefined ? "off" : "on";
  }
  // Issue 27: absent from an older form (a stale page): the policy is left as it is.
  if (b.playback_policy !== undefined) change.playbackPolicy = String(b.playback_policy);
  // Issue 27 item 4: checked against the ladder by the same rule as `--static-renditions`.
  if (b.static_shown !== undefined) change.staticRenditions = list(b.static_renditions).join(",") || "none";
  try {
    applySettingsChange(current, change);
  } catch (err) {
    if (err instanceof SettingsChangeRefused) return { error: err.message };
    throw err;
  }
  return { change };
}

const checked = (on: boolean) => (on ? html` checked` : html``);

export function organizationForm(member: Member, s: OrgSettings): Html {
  const inLadder = new Set(s.transcoding?.ladder.map((r) => r.name) ?? []);
  const named = s.downloads.rungs.filter((r) => r !== "top");
  const mode = s.downloads.rungs.length === 0 ? "none" : s.downloads.rungs.includes("top") ? "top" : "rungs";
  const ladder = s.transcoding
    ? html`<fieldset><legend>Transcoding ladder</legend>
    <p class="help">The renditions made for each new video (at least one). Videos already transcoded keep theirs.</p>
    ${RUNG_NAMES.map((n) => {
      const r = STANDARD_RUNGS[n]!;
      return html`<label class="check"><input type="checkbox" name="ladder" value="${n}"${checked(inLadder.has(n))}> ${n} <span class="muted">(${r.videoBitrateKbps} kbps video, ${r.audioBitrateKbps} kbps audio)</span></label>`;
    })}
  </fieldset>`
    : html``;
  const drm = drmSwitchAvailable()
    ? html`<fieldset><legend>DRM</legend>
    <input type="hidden" name="drm_shown" value="1">
    <label class="check"><input type="checkbox" role="switch" name="drm" id="drm-switch"${checked(s.features.drm)}> DRM (videos and live streams may be created with drm_enabled: true)</label>
    <p class="help">Off: new requests with drm_enabled: true are refused with DRM_NOT_AVAILABLE. Videos already protected keep their keys and licences.</p>
  </fieldset>`
    : html``;
  return html`<section class="panel" aria-labelledby="edit-org">
  <h2 id="edit-org">Change settings</h2>
  <form method="post" action="/settings/organization">
  ${csrfField(member)}
  ${ladder}
  <fieldset><legend>Downloads</legend>
    <label class="check"><input type="radio" name="downloads" value="none"${checked(mode === "none")}> None (downloads off)</label>
    <label class="check"><input type="radio" name="downloads" value="top"${checked(mode === "top")}> Top rendition (the highest one produced)</label>
    <label class="check"><input type="radio" name="downloads" value="rungs"${checked(mode === "rungs")}> Named renditions:</label>
    ${RUNG_NAMES.map((n) => html`<label class="check"><input type="checkbox" name="download_rungs" value="${n}"${checked(named.includes(n))}> Download ${n}</label>`)}
    <p><label for="download-format">Download format</label>
    <select id="download-format" name="download_format">${["mkv", "mp4-encrypted"].map((f) => html`<option value="${f}"${f === s.downloads.format ? html` selected` : ""}>${f}</option>`)}</select></p>
  </fieldset>
  ${drm}
  <fieldset>
    <legend>Playback</legend>
    <p><label for="playback-policy">Playback policy of new videos and streams</label>
    <select id="playback-policy" name="playback_policy">${["public", "signed"].map((p) => html`<option value="${p}"${p === s.playback.policy ? html` selected` : ""}>${p}</option>`)}</select></p>
    <p class="help">Signed: every media URL needs <code>?token=</code>, a JWT signed with one of the <a href="/settings/signing-keys">signing keys</a>. A request's <code>playback_policy</code> wins; existing videos and streams keep theirs.</p>
  </fieldset>
  <fieldset>
    <legend>Static renditions</legend>
    <input type="hidden" name="static_shown" value="1">
    <p class="help">Files made for each new video without <code>static_renditions</code> of its own (and each live recording), by stream copy of its renditions: none are made for DRM videos.</p>
    ${[
      ["highest", "highest: an MP4 of the top rendition produced"],
      ["audio-only", "audio-only: an M4A of the audio"],
      ...RUNG_NAMES.map((n) => [n, `${n}: an MP4 of that rendition (in the ladder)`]),
    ].map(([v, label]) => html`<label class="check"><input type="checkbox" name="static_renditions" value="${v}"${checked(s.staticRenditions.includes(v!))}> ${label}</label>`)}
  </fieldset>
  <p><button type="submit" class="primary">Save settings</button></p>
  </form>
</section>`;
}
