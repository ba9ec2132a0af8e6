import { Elysia } from "elysia";
import type { SettingsDeps } from "./deps.ts";
import { type Html, html } from "./html.ts";
import { renderPage, timeTag } from "./page.ts";
import { sessionGuard } from "./session-guard.ts";

/**
 * Organization: what the operator configured (ladder, downloads, DRM, limits)
 * and what the organization uses now. Read only on the screen: these are plan
 * settings, changed by the operator with `cli org set` (src/orgs/org-settings.ts:
 * "never by an API key"). Every role may look.
 */

interface Usage {
  videosByStatus: Array<{ status: string; count: number }>;
  slotsHeld: number;
  poolHeld: number;
}

async function usageOf(deps: SettingsDeps, orgId: string): Promise<Usage> {
  // Two indexed reads: actors_kind_status_org, and the actor_tags primary key (the same count the slot check makes).
  const [videos, slots, pool] = await Promise.all([
    deps.database.client.execute({ sql: "SELECT status, count(*) FROM actors WHERE kind = 'video' AND org_id = ? AND deleted_at IS NULL GROUP BY status ORDER BY status", args: [orgId] }),
    deps.database.client.execute({ sql: "SELECT count(*) FROM actor_tags WHERE kind = 'livestream' AND tag = 'holdsSlot' AND org_id = ?", args: [orgId] }),
    deps.database.client.execute({ sql: "SELECT count(*) FROM actor_tags WHERE kind = 'livestream' AND tag = 'holdsSlot'", args: [] }),
  ]);
  return {
    videosByStatus: videos.rows.map((r) => ({ status: String(r[0]), count: Number(r[1]) })),
    slotsHeld: Number(slots.rows[0]?.[0] ?? 0),
    poolHeld: Number(pool.rows[0]?.[0] ?? 0),
  };
}

const fact = (term: string, value: Html | string | number) => html`<dt>${term}</dt><dd>${value}</dd>`;

export function organizationPages(deps: SettingsDeps) {
  return new Elysia({ name: "settings-organization" }).use(sessionGuard(deps)).get("/organization", async ({ member }) => {
    const { org } = member;
    const s = org.settings;
    const usage = await usageOf(deps, org.id);
    const totalVideos = usage.videosByStatus.reduce((n, v) => n + v.count, 0);
    const ladder = s.transcoding
      ? html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Rendition</th><th scope="col">Height</th><th scope="col">Video</th><th scope="col">Audio</th></tr></thead>
<tbody>${s.transcoding.ladder.map((r) => html`<tr><td>${r.name}</td><td>${r.height} px</td><td>${r.videoBitrateKbps} kbps</td><td>${r.audioBitrateKbps} kbps</td></tr>`)}</tbody>
</table></div>`
      : html`<p class="flash flash-error">Transcoding is not configured: new videos are refused with TRANSCODE_NOT_CONFIGURED. Ask the operator (<code>cli org set --transcoding on</code>).</p>`;
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
  ${s.features.drm ? " Videos and live streams created with drm: true are encrypted (ClearKey licences from this service)." : " The organization's plan does not include DRM; requests with drm: true are refused with DRM_NOT_AVAILABLE."}</p>
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
</section>
<section class="panel" aria-labelledby="usage">
  <h2 id="usage">Current usage</h2>
  <dl class="facts">
    ${fact("Videos", html`${totalVideos}${usage.videosByStatus.length ? html` <span class="muted">(${usage.videosByStatus.map((v) => `${v.status}: ${v.count}`).join(", ")})</span>` : ""}`)}
    ${fact("Live streams holding a slot", html`<span id="slots-used">${usage.slotsHeld} of ${deps.config.liveSlotsPerOrg}</span> <span class="muted">(service-wide: ${usage.poolHeld} of ${deps.config.liveSlots})</span>`)}
  </dl>
</section>
<p class="muted">These settings are changed by the operator (<code>cli org set</code>).</p>`;
    return renderPage({ member, title: "Organization", active: "organization", body });
  });
}
