import { Elysia } from "elysia";
import { ApiError } from "../http/api-error.ts";
import { parseAnalyticsQuery } from "../analytics/analytics-query.ts";
import type { Breakdown } from "../analytics/analytics-reads.ts";
import type { PageDeps } from "./deps.ts";
import { type Html, html } from "./html.ts";
import { emptyState, renderPage } from "./page.ts";
import { sessionGuard } from "./session-guard.ts";
import type { Member } from "./types.ts";

/**
 * Viewer analytics (issue 28): the organization's overview, one video's and
 * one stream's figures, from the same reads as the API (src/analytics). Charts
 * are drawn by uPlot, served from node_modules (`/settings/assets/uplot.*`),
 * with `analytics-charts.js` reading the series from a JSON data block.
 */

const ID = /^[A-Za-z0-9_]{1,64}$/;
const pct = (r: number) => `${(r * 100).toFixed(2)} %`;
const secs = (s: number) => (s >= 3600 ? `${(s / 3600).toFixed(1)} h` : s >= 60 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`);
const ms = (v: number | null) => (v === null ? "–" : `${v} ms`);

function rangeOf(request: Request) {
  try {
    return parseAnalyticsQuery(request.url);
  } catch (err) {
    if (err instanceof ApiError) return parseAnalyticsQuery("/");
    throw err;
  }
}

function rangeForm(action: string, granularity: string): Html {
  return html`<form method="get" action="${action}" class="inline">
  <label for="granularity">Step</label>
  <select id="granularity" name="granularity">${["minute", "hour", "day"].map((g) => html`<option value="${g}"${g === granularity ? html` selected` : ""}>${g}</option>`)}</select>
  <button type="submit" class="secondary">Show</button>
  <span class="muted">the last 24 hours (or pass from= and to=)</span>
</form>`;
}

function figuresTable(rows: Array<[string, string]>): Html {
  return html`<table class="figures"><tbody>${rows.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${v}</td></tr>`)}</tbody></table>`;
}

function breakdown(title: string, list: Breakdown[]): Html {
  return html`<section class="breakdown"><h3>${title}</h3>${
    list.length === 0
      ? emptyState("No views yet.")
      : html`<table><thead><tr><th>${title}</th><th>Views</th><th>Watch time</th></tr></thead><tbody>${list.map(
          (b) => html`<tr><td>${b.value}</td><td>${b.views}</td><td>${secs(b.watch_time_seconds)}</td></tr>`,
        )}</tbody></table>`
  }</section>`;
}

/** Chart containers with their series as a data attribute: `analytics-charts.js` draws one uPlot chart per `[data-chart]`. */
function charts(series: readonly object[], list: Array<{ key: string; label: string }>): Html {
  return html`<div class="charts" data-series="${JSON.stringify(series)}">${list.map((c) => html`<figure><figcaption>${c.label}</figcaption><div data-chart="${c.key}" data-label="${c.label}"></div></figure>`)}</div>`;
}

const ASSETS = html`<link rel="stylesheet" href="/settings/assets/uplot.min.css">
<script src="/settings/assets/uplot.iife.min.js" defer></script>
<script src="/settings/assets/analytics-charts.js" defer></script>`;

export function analyticsPages(deps: PageDeps<"analytics">) {
  const { reads, lookup } = deps.analytics;

  async function assetPage(member: Member, request: Request, id: string, kind: "video" | "livestream"): Promise<Response> {
    const asset = ID.test(id) ? await lookup.of(id, kind) : null;
    if (!asset || asset.orgId !== member.org.id) return renderPage({ member, title: "Not found", active: "analytics", body: emptyState("No such video or stream in this organization."), status: 404 });
    const range = rangeOf(request);
    const d = await reads.asset(id, range);
    const live = kind === "livestream" ? await reads.concurrency(id, range) : null;
    const rows: Array<[string, string]> = [
      ["Views", String(d.views)],
      ["Unique viewers", String(d.unique_viewers)],
      ["Watch time", secs(d.watch_time_seconds)],
      ["Startup time p50 / p95", `${ms(d.startup_time_ms.p50)} / ${ms(d.startup_time_ms.p95)}`],
      ["Rebuffer ratio", pct(d.rebuffer_ratio)],
      ["Stalls", `${d.stall_count} (${secs(d.stalled_seconds)})`],
      ["Error rate", pct(d.error_rate)],
      ["Exits before start", String(d.exits_before_start)],
    ];
    if (live) rows.push(["Concurrent viewers now / peak", `${live.current} / ${live.peak}`]);
    const series = d.series;
    const list = [
      { key: "views", label: "Views" },
      { key: "watch_time_seconds", label: "Watch time (s)" },
      { key: "startup_time_ms_avg", label: "Startup time (ms)" },
      { key: "rebuffer_ratio", label: "Rebuffer ratio" },
    ];
    const liveChart = live ? charts(live.series, [{ key: "viewers", label: "Concurrent viewers" }]) : html``;
    return renderPage({
      member,
      title: `Analytics: ${kind === "video" ? "video" : "live stream"} ${id}`,
      active: "analytics",
      body: html`${ASSETS}
${rangeForm(`/settings/analytics/${kind === "video" ? "videos" : "livestreams"}/${id}`, range.granularity)}
${figuresTable(rows)}
${liveChart}
${charts(series, list)}
${breakdown("Country", d.by.country)}${breakdown("Browser", d.by.browser)}${breakdown("OS", d.by.os)}${breakdown("Device", d.by.device_type)}${breakdown("Rendition", d.by.rendition)}`,
    });
  }

  return new Elysia({ name: "settings-analytics" })
    .use(sessionGuard(deps))
    .get("/analytics", async ({ member, request }) => {
      const range = rangeOf(request);
      const d = await reads.overview(member.org.id, range);
      const top = (title: string, list: typeof d.top_videos, path: string) =>
        html`<section class="breakdown"><h3>${title}</h3>${
          list.length === 0
            ? emptyState("No views yet.")
            : html`<table><thead><tr><th>Id</th><th>Views</th><th>Watch time</th></tr></thead><tbody>${list.map(
                (v) => html`<tr><td><a href="/settings/analytics/${path}/${v.id}"><code>${v.id}</code></a></td><td>${v.views}</td><td>${secs(v.watch_time_seconds)}</td></tr>`,
              )}</tbody></table>`
        }</section>`;
      return renderPage({
        member,
        title: "Analytics",
        active: "analytics",
        body: html`${ASSETS}
${rangeForm("/settings/analytics", range.granularity)}
${figuresTable([
  ["Views", String(d.views)],
  ["Unique viewers", String(d.unique_viewers)],
  ["Watch time", secs(d.watch_time_seconds)],
  ["Rebuffer ratio", pct(d.rebuffer_ratio)],
  ["Error rate", pct(d.error_rate)],
])}
${charts(d.series, [
  { key: "views", label: "Views" },
  { key: "watch_time_seconds", label: "Watch time (s)" },
  { key: "rebuffer_ratio", label: "Rebuffer ratio" },
])}
${top("Top videos", d.top_videos, "videos")}${top("Top live streams", d.top_livestreams, "livestreams")}
${breakdown("Country", d.by.country)}${breakdown("Browser", d.by.browser)}${breakdown("Device", d.by.device_type)}`,
      });
    })
    .get("/analytics/videos/:id", ({ member, request, params }) => assetPage(member, request, params.id, "video"))
    .get("/analytics/livestreams/:id", ({ member, request, params }) => assetPage(member, request, params.id, "livestream"));
}
