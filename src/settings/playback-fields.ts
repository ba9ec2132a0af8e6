import type { PlaybackPolicy } from "../orgs/org-settings.ts";
import { html, type Html } from "./html.ts";

/**
 * The playback policy field of the "add a video" and "new live stream" forms (issue 27): the organization's default
 * selected, so a form left as it is creates what the API would without `playback_policy`.
 */
export function policySelect(id: string, orgDefault: PlaybackPolicy): Html {
  const option = (p: PlaybackPolicy, label: string) => html`<option value="${p}"${p === orgDefault ? html` selected` : ""}>${label}${p === orgDefault ? " (organization default)" : ""}</option>`;
  return html`<label for="${id}">Playback policy</label>
      <select id="${id}" name="playback_policy" aria-describedby="${id}-help">${option("public", "Public")}${option("signed", "Signed")}</select>
      <span class="muted" id="${id}-help">Signed: every media URL needs <code>?token=</code>, a JWT signed with one of the <a href="/settings/signing-keys">signing keys</a>.</span>`;
}
