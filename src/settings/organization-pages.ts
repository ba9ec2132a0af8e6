import { Elysia } from "elysia";
import type { SettingsDeps } from "./deps.ts";
import { type Html, html } from "./html.ts";
import { applyOrganizationForm, drmSwitchAvailable, organizationForm } from "./organization-form.ts";
import { type Flash, redirect, renderPage, timeTag } from "./page.ts";
import { requireAction, sessionGuard } from "./session-guard.ts";
import { can, type Member } from "./types.ts";

/**
 * Organization: the settings and what the organization uses now. Every role
 * may look; owner and admin change the ladder, downloads and the DRM switch
 * (organization-form.ts). Limits and API permissions are the operator's plan
 * (`cli org set`): an organization must not raise its own limits. Never by an
 * API key (src/orgs/org-settings.ts).
 */

interface Usage {
  videosByStatus: Array<{ status: string; count: number }>;
  liveStreams: number;
  slotsHeld: number;
  poolHeld: number;
}

async function usageOf(deps: SettingsDeps, orgId: string): Promise<Usage> {
  // Through the actor runtime: counts by status (index actors_kind_status_org) and by tag (the slot check's count).
  const [videosByStatus, streams, slotsHeld, poolHeld] = await Promise.all([
    deps.runtime.countByStatus("video", orgId),
    deps.runtime.countByStatus("livestream", orgId),
    deps.runtime.countTagged("livestream", "holdsSlot", orgId),
    deps.runtime.countTagged("livestream", "holdsSlot"),
  ]);
  return { videosByStatus, liveStreams: streams.reduce((n, s) => n + s.count, 0), slotsHeld, poolHeld };
}

const fact = (term: string, value: Html | string | number) => html`<dt>${term}</dt><dd>${value}</dd>`;

async function organizationPage(deps: SettingsDeps, member: Member, opts: { flash?: Flash; status?: number } = {}): Promise<Response> {
  const { org } = member;
  const s = org.settings;
  const usage = await usageOf(deps, org.id);
  const totalVideos = usage.videosByStatus.reduce((n, v) => n + v.count, 0);
  const ladder = s.transcoding
    ? html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Rendition</th><th scope="col">Height</th><th scope="col">Video</th><th scope="col">Audio</th></tr></thead>
<tbody>${s.transcoding.ladder.map((r) => html`<tr><td>${r.name}</td><td>${r.height} px</td><td>${r.videoBitrateKbps} kbps</td><td>${r.audioBitrateKbps} kbps</td></tr>`)}</tbody>
</table></div>`
    : html`<p class="flash flash-error">Transcoding is not configured: new videos and uploads are refused with TRANSCODE_NOT_CONFIGURED, and live streams are not recorded. Ask the operator (<code>cli org set --transcoding on</code>).</p>`;
  const body = html`<section class="panel" aria-labelledby="org-facts">
  <h2 id="org-facts">Organization</h2>
  <dl class="facts">
    ${fact("Name", org.name)}
    ${fact("Id", html`<code>${org.id}</code>`)}
    ${fact("Created", timeTag(org.createdAt))}
  </dl>
</section>
<section class="panel" aria-labelledby="ladder">
  <h2 id="ladder">Transcoding ladder</h2>
  ${ladder}
</section>
<section class="panel" aria-labelledby="downloads">
  <h2 id="downloads">Downloads</h2>
  <dl class="facts">
    ${fact("Renditions", s.downloads.rungs.length === 0 ? "none (downloads off)" : s.downloads.rungs.join(", "))}
    ${fact("Format", s.downloads.format)}
  </dl>
</section>
<section class="panel" aria-labelledby="drm">
  <h2 id="drm">DRM</h2>
  <p><span class="badge ${s.features.drm ? "ok" : ""}" id="drm-state">${s.features.drm ? "DRM available" : "DRM not available"}</span>
  ${s.features.drm ? " Videos and live streams created with drm: true are encrypted (ClearKey licences from this service)." : drmSwitchAvailable() ? " DRM is switched off: requests with drm_enabled: true are refused with DRM_NOT_AVAILABLE." : " This server cannot package DRM (no Shaka Packager); requests with drm_enabled: true are refused with DRM_NOT_AVAILABLE."}</p>
</section>
<section class="panel" aria-labelledby="limits">
  <h2 id="limits">Limits</h2>
  <dl class="facts">
    ${fact("API requests per minute (per key)", s.limits.requestsPerMinute)}
    ${fact("Videos created per minute", s.limits.videosCreatePerMinute)}
    ${fact("Upload URLs per minute", s.limits.uploadUrlPerMinute)}
    ${fact("Live streams created per minute", s.limits.livestreamsCreatePerMinute)}
    ${fact("Live streams at once", deps.config.liveSlotsPerOrg)}
    ${fact("API permissions", s.permissions.length === 0 ? "none" : s.permissions.join(", "))}
  </dl>
  <p class="muted">Limits and permissions are the operator's (<code>cli org set</code>): an organization cannot raise its own limits.</p>
</section>
<section class="panel" aria-labelledby="usage">
  <h2 id="usage">Current usage</h2>
  <dl class="facts">
    ${fact("Videos", html`${totalVideos}${usage.videosByStatus.length ? html` <span class="muted">(${usage.videosByStatus.map((v) => `${v.status}: ${v.count}`).join(", ")})</span>` : ""}`)}
    ${fact("Live streams", html`<span id="live-streams">${usage.liveStreams}</span>`)}
    ${fact("Live streams holding a slot", html`<span id="slots-used">${usage.slotsHeld} of ${deps.config.liveSlotsPerOrg}</span> <span class="muted">(service-wide: ${usage.poolHeld} of ${deps.config.liveSlots})</span>`)}
  </dl>
</section>
${can(member.role, "organization.manage") ? organizationForm(member, s) : html`<p class="muted">Owners and admins change the ladder, downloads and DRM.</p>`}`;
  return renderPage({ member, title: "Organization", active: "organization", body, flash: opts.flash, status: opts.status });
}

export function organizationPages(deps: SettingsDeps) {
  return new Elysia({ name: "settings-organization" })
    .use(sessionGuard(deps))
    .get("/organization", ({ member, query }) => organizationPage(deps, member, { flash: query.done === "saved" ? { kind: "success", message: "Settings saved. New videos use them." } : undefined }))
    .post("/organization", async ({ member, body }) => {
      const denied = requireAction(member, "organization.manage");
      if (denied) return denied;
      const result = applyOrganizationForm(member.org.settings, body as Record<string, unknown> | undefined);
      if ("error" in result) return organizationPage(deps, member, { status: 400, flash: { kind: "error", message: `Not saved: ${result.error}` } });
      // Applied again to the row read inside the write, so an operator's change made meanwhile (limits, permissions) is kept.
      await deps.orgs.updateSettings(member.org.id, (fresh) => {
        const again = applyOrganizationForm(fresh, body as Record<string, unknown> | undefined);
        return "settings" in again ? again.settings : fresh;
      });
      deps.logger.info("Organization settings changed on the screen", { org_id: member.org.id, role: member.role });
      return redirect("/settings/organization?done=saved");
    });
}
