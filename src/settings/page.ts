import { type Html, html } from "./html.ts";
import { can, type Member } from "./types.ts";

/**
 * The settings screen's layout and its small shared pieces. Server-rendered
 * HTML, one stylesheet and one script served by the service itself
 * (/settings/assets/, settings-assets.ts): nothing from a CDN, no build step.
 */

export type Section = "keys" | "webhooks" | "videos" | "live" | "organization" | "members" | "signing-keys" | "restrictions" | "analytics";

export type Flash = string | { kind: "success" | "error" | "info"; message: string | Html };

export interface PageOptions {
  member: Member;
  title: string;
  /** The navigation entry to mark as current. */
  active?: Section;
  body: Html;
  flash?: Flash;
  status?: number;
}

/** The navigation, labels exactly as issue 13 names them (the tests find links by them). */
const NAV: Array<{ section: Section; label: string; href: string; ownerOnly?: boolean }> = [
  { section: "keys", label: "API keys", href: "/settings/keys" },
  { section: "webhooks", label: "Webhooks", href: "/settings/webhooks" },
  { section: "videos", label: "Videos", href: "/settings/videos" },
  { section: "live", label: "Live streams", href: "/settings/live" },
  { section: "organization", label: "Organization", href: "/settings/organization" },
  { section: "members", label: "Members", href: "/settings/members", ownerOnly: true },
  { section: "signing-keys", label: "Signing keys", href: "/settings/signing-keys" },
  { section: "restrictions", label: "Restrictions", href: "/settings/restrictions" },
  { section: "analytics", label: "Analytics", href: "/settings/analytics" },
];

/**
 * Every settings response: no caching (pages show secrets once), no framing
 * (clickjacking), forms may post only to this origin.
 */
export const PAGE_HEADERS: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  // Every script is a file (src/settings/assets, /assets; issue 25). No script-src yet: the browser suites' string predicates
  // (playwright's waitForFunction evaluates them) would need 'unsafe-eval'; docs/decisions.md "Faces only face".
  "content-security-policy": "frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'",
};

function head(title: string): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Settings</title>
<link rel="stylesheet" href="/settings/assets/settings.css">
<script src="/settings/assets/settings.js" defer></script>
</head>`;
}

function flashBox(flash: Flash | undefined): Html {
  if (!flash) return html``;
  const f = typeof flash === "string" ? { kind: "info" as const, message: flash } : flash;
  return html`<div class="flash flash-${f.kind}" role="${f.kind === "error" ? "alert" : "status"}">${f.message}</div>`;
}

/** A whole page, signed in or not: the head, `top` (header and navigation when signed in), then the main content under its title and flash. */
function documentOf(opts: { title: string; body: Html; flash?: Flash }, layout: { top: Html; bodyAttrs: Html; mainAttrs: Html }): Html {
  return html`${head(opts.title)}
<body${layout.bodyAttrs}>
${layout.top}
<main id="main"${layout.mainAttrs}>
<h1>${opts.title}</h1>
${flashBox(opts.flash)}
${opts.body}
</main>
</body>
</html>`;
}

export function htmlResponse(body: Html, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(body.value, { status, headers: { ...PAGE_HEADERS, ...headers } });
}

/** The hidden field every form of a signed-in page carries (session-guard.ts checks it). */
export function csrfField(member: Member): Html {
  return html`<input type="hidden" name="_csrf" value="${member.csrfToken}">`;
}

/** A signed-in page: header (organization, email, Sign out), navigation, content. */
export function renderPage(opts: PageOptions): Response {
  const { member } = opts;
  const links = NAV.filter((n) => !n.ownerOnly || can(member.role, "members.manage")).map(
    (n) => html`<li><a href="${n.href}"${n.section === opts.active ? html` aria-current="page"` : ""}>${n.label}</a></li>`,
  );
  const top = html`<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <div class="brand"><span class="org">${member.org.name}</span> <span class="muted">settings</span></div>
  ${orgSwitcher(member)}
  <div class="who">
    <span class="email" title="Signed in as">${member.email}</span> <span class="badge">${member.role}</span>
    <form method="post" action="/settings/logout" class="inline">${csrfField(member)}<button type="submit" class="link">Sign out</button></form>
  </div>
</header>
<nav class="nav" aria-label="Settings sections"><ul>${links}</ul></nav>`;
  return htmlResponse(documentOf(opts, { top, bodyAttrs: html``, mainAttrs: html` tabindex="-1"` }), opts.status ?? 200);
}

/**
 * For a person in several organizations: a form that points the session at
 * another one (POST /settings/switch-organization; the server checks the
 * membership, the guard the CSRF token). Without JavaScript: pick, then "Switch".
 */
function orgSwitcher(member: Member): Html {
  const list = member.organizations ?? [];
  if (list.length < 2) return html``;
  return html`<form method="post" action="/settings/switch-organization" class="inline switcher">
    ${csrfField(member)}
    <label for="org-switch">Switch organization</label>
    <select id="org-switch" name="org_id">${list.map((o) => html`<option value="${o.id}"${o.id === member.org.id ? html` selected` : ""}>${o.name} (${o.role})</option>`)}</select>
    <button type="submit" class="secondary">Switch</button>
  </form>`;
}

/** A page without a session: sign-in, setup link, errors before sign-in. */
export function publicPage(opts: { title: string; body: Html; flash?: Flash; status?: number; headers?: Record<string, string> }): Response {
  return htmlResponse(documentOf(opts, { top: html``, bodyAttrs: html` class="public"`, mainAttrs: html` class="card"` }), opts.status ?? 200, opts.headers);
}

/** A button that copies `text` to the clipboard (settings.js handles `data-copy`). */
export function copyButton(text: string, label = "Copy"): Html {
  return html`<button type="button" class="copy" data-copy="${text}" aria-label="${label}">${label}</button>`;
}

/**
 * A value shown once (a new API key, an invitation link): the panel with what
 * to do with it, the value, and a copy button. The value is never rendered again.
 */
export function shownOnce(o: { id: string; heading: string; text: Html; value: string; copyLabel: string }): Html {
  return html`<section class="panel" aria-labelledby="${o.id}-heading">
  <h2 id="${o.id}-heading">${o.heading}</h2>
  <p>${o.text}</p>
  <code class="secret" id="${o.id}">${o.value}</code>${copyButton(o.value, o.copyLabel)}
</section>`;
}

/** What a list shows when it has nothing yet. */
export function emptyState(text: string | Html): Html {
  return html`<div class="empty" role="status"><p>${text}</p></div>`;
}

export function forbiddenPage(member: Member, text = "You do not have access to this section. Ask the organization's owner."): Response {
  return renderPage({
    member,
    title: "Access denied",
    body: html`<p>${text}</p><p><a href="/settings/videos">Back to Videos</a></p>`,
    flash: { kind: "error", message: "You do not have access to this page." },
    status: 403,
  });
}

/** Dates as the screen shows them: UTC, minute precision, machine-readable in <time>. */
export function timeTag(ms: number | null | undefined, empty = "never"): Html {
  if (ms === null || ms === undefined) return html`<span class="muted">${empty}</span>`;
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace("T", " ")} UTC</time>`;
}

/** 303 See Other: the browser follows with a GET (post/redirect/get). */
export function redirect(location: string, headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: { location, "cache-control": "no-store", ...headers } });
}
