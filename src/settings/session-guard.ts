import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { html } from "./html.ts";
import { forbiddenPage, publicPage, redirect } from "./page.ts";
import { peopleFor } from "../people/people-store.ts";
import type { SettingsDeps } from "./deps.ts";
import { can, type Member, type ScreenAction } from "./types.ts";

export const SESSION_COOKIE = "vidlive_session";

/** The people store of a database (src/people), named here for the sections and tests that reach it through the guard. */
export { peopleFor };

export function readCookie(request: Request, name: string): string | null {
  const header = request.headers.get("cookie");
  if (!header) return null;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return null;
}

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Lax (not sent
 * on cross-site POSTs; sent when a link from elsewhere is followed), Path
 * /settings (the API never sees it), Secure when BASE_URL is https.
 */
export function sessionCookie(baseUrl: string, token: string, maxAgeSeconds: number): string {
  const secure = baseUrl.startsWith("https:") ? "; Secure" : "";
  return `${SESSION_COOKIE}=${token}; Path=/settings; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

export function clearSessionCookie(baseUrl: string): string {
  return sessionCookie(baseUrl, "", 0);
}

/**
 * The request comes from a page of this service. Origin (every POST of a
 * current browser) must be BASE_URL's origin or the request's own; without
 * Origin, Sec-Fetch-Site must say same-origin; with neither (not a browser:
 * curl, scripts) the CSRF token alone decides.
 */
export function sameOriginRequest(request: Request, baseUrl: string): boolean {
  const origin = request.headers.get("origin");
  if (origin !== null) {
    if (origin === "null") return false;
    try {
      return origin === new URL(baseUrl).origin || origin === new URL(request.url).origin;
    } catch {
      return false;
    }
  }
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin";
  return true;
}

function tokensEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function csrfFrom(body: unknown, request: Request): string {
  const fromBody = body && typeof body === "object" ? (body as Record<string, unknown>)._csrf : undefined;
  if (typeof fromBody === "string") return fromBody;
  // Scripts on the screen (fetch) may send it as a header instead.
  return request.headers.get("x-csrf-token") ?? "";
}

export function csrfRefused(): Response {
  return publicPage({
    title: "Request refused",
    status: 403,
    body: html`<p>This form was not sent from the settings screen, or the page had expired. Nothing was changed.</p><p><a href="/settings">Back to settings</a></p>`,
    flash: { kind: "error", message: "Request refused (cross-site request or missing form token)." },
  });
}

/**
 * Signed-in routes: `.use(sessionGuard(deps))` in a section plugin gives its
 * handlers `member` (deduplicated by name when several sections use it).
 * Without a valid session: 303 to /settings/login. Every state-changing
 * request (not GET/HEAD) must carry the session's `_csrf` (form field or
 * X-CSRF-Token header) AND come from this origin, else a 403 page.
 */
export function sessionGuard(deps: Pick<SettingsDeps, "people" | "address">) {
  const { people } = deps;
  return new Elysia({ name: "settings-session-guard" })
    .resolve({ as: "scoped" }, async ({ request }) => {
      const token = readCookie(request, SESSION_COOKIE);
      // Typed non-null: onBeforeHandle below answers before any handler runs without one.
      const member = (token ? await people.sessionMember(token) : null) as Member;
      return { member };
    })
    .onBeforeHandle({ as: "scoped" }, ({ member, request, body }) => {
      if (!member) return redirect("/settings/login", { "set-cookie": clearSessionCookie(deps.address.baseUrl) });
      if (request.method === "GET" || request.method === "HEAD") return;
      if (!sameOriginRequest(request, deps.address.baseUrl) || !tokensEqual(csrfFrom(body, request), member.csrfToken)) return csrfRefused();
    });
}

/**
 * The 403 page when the member's role may not do `action`, else undefined.
 * In a handler: `const denied = requireAction(member, "keys.manage"); if (denied) return denied;`
 * or as a route's `beforeHandle: ({ member }) => requireAction(member, "keys.manage")`.
 */
export function requireAction(member: Member, action: ScreenAction): Response | undefined {
  return can(member.role, action) ? undefined : forbiddenPage(member);
}
