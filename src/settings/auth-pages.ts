import { Elysia } from "elysia";
import { InvalidInput } from "../errors.ts";
import { clientAddressGroup } from "../http/client-address.ts";
import type { PageDeps } from "./deps.ts";
import { type Html, html } from "./html.ts";
import { forbiddenPage, publicPage, redirect } from "./page.ts";
import { MIN_PASSWORD_LENGTH, SESSION_MAX_MS } from "../people/people-rules.ts";
import { clearSessionCookie, csrfRefused, readCookie, SESSION_COOKIE, sameOriginRequest, sessionCookie, sessionGuard } from "./session-guard.ts";

/**
 * Sign-in, the one-time setup link, sign-out. Before a session exists there is
 * no synchronizer token: these forms are protected by the Origin /
 * Sec-Fetch-Site check (login CSRF), and by the throttle.
 */

/**
 * Sign-in attempts per rate-limit window (RATE_LIMIT_WINDOW_MS, one minute by
 * default): per account *and* client address (IPv6 by /64), and per client
 * address whatever the emails. Never per account alone: that allowance is
 * spent by anyone who knows the email, which locked its owner out.
 */
export const LOGIN_LIMIT_PER_ACCOUNT = 5;
export const LOGIN_LIMIT_PER_ADDRESS = 20;

/** The throttle's buckets for one attempt (also the invitation's accept form, which checks a password). */
export function loginChecks(email: string, addressGroup: string): Array<{ key: string; limit: number }> {
  return [
    { key: `login:pair:${addressGroup} ${email}`, limit: LOGIN_LIMIT_PER_ACCOUNT },
    { key: `login:addr:${addressGroup}`, limit: LOGIN_LIMIT_PER_ADDRESS },
  ];
}

const str = (body: unknown, name: string): string => {
  const v = body && typeof body === "object" ? (body as Record<string, unknown>)[name] : undefined;
  return typeof v === "string" ? v : "";
};

function loginForm(email = "") {
  return html`<form method="post" action="/settings/login" class="stack">
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${email}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <div><button type="submit">Sign in</button></div>
</form>`;
}

function setupForm(token: string, email: string) {
  return html`<p>Choose a password for <strong>${email}</strong> (at least ${MIN_PASSWORD_LENGTH} characters).</p>
<form method="post" action="/settings/setup/${token}">
  <input type="hidden" name="email" value="${email}" autocomplete="username">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required>
  <label for="confirm">Confirm password</label>
  <input id="confirm" name="confirm" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required>
  <div><button type="submit">Set password</button></div>
</form>`;
}

/** A mailed invitation for an email with a proven account: its holder joins with that account's password. */
function acceptForm(token: string, email: string, orgName: string) {
  return html`<p>You already have an account for <strong>${email}</strong>. Enter its password to join <strong>${orgName}</strong>; you then switch between your organizations in the header.</p>
<form method="post" action="/settings/setup/${token}">
  <input type="hidden" name="email" value="${email}" autocomplete="username">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <div><button type="submit">Join ${orgName}</button></div>
</form>`;
}

const linkInvalid = () =>
  publicPage({
    title: "Link not valid",
    status: 410,
    body: html`<p>This setup link was already used or has expired. Ask the organization's owner (or the operator) for a new one, or <a href="/settings/login">sign in</a>.</p>`,
  });

const throttled = (retryAfterSeconds: number, body: Html) =>
  publicPage({
    title: "Too many attempts",
    status: 429,
    headers: { "retry-after": String(retryAfterSeconds) },
    flash: { kind: "error", message: `Too many sign-in attempts. Try again in ${retryAfterSeconds} seconds.` },
    body,
  });

export function authPages(deps: PageDeps<"config" | "logger" | "rateLimiter">) {
  const { people } = deps;

  async function signIn(userId: string, orgId: string): Promise<Response> {
    const s = await people.createSession(userId, orgId);
    return redirect("/settings", { "set-cookie": sessionCookie(deps.address.baseUrl, s.token, Math.floor(SESSION_MAX_MS / 1000)) });
  }

  return new Elysia({ name: "settings-auth" })
    .get("/login", () => publicPage({ title: "Sign in", body: loginForm() }))
    .post("/login", async ({ request, body, server }) => {
      if (!sameOriginRequest(request, deps.address.baseUrl)) return csrfRefused();
      const email = str(body, "email").trim().toLowerCase();
      const password = str(body, "password");
      // Behind a reverse proxy (TRUST_PROXY hops) the socket's address is the proxy's: the client is read from X-Forwarded-For.
      const address = clientAddressGroup(request, server?.requestIP(request)?.address, deps.config.trustProxy);
      // Counted before the password is checked: every attempt spends the allowance, so guessing is bounded per account and address, and per address.
      const pending = deps.rateLimiter.hit(loginChecks(email, address));
      const verdict = pending instanceof Promise ? await pending : pending;
      if (!verdict.ok) {
        deps.logger.warn("Sign-in throttled", { key_kind: verdict.key.startsWith("login:pair:") ? "account and address" : "address" });
        return throttled(verdict.retryAfterSeconds, loginForm(email));
      }
      const who = email && password ? await people.verifyLogin(email, password) : null;
      if (!who) {
        return publicPage({ title: "Sign in", status: 401, flash: { kind: "error", message: "Wrong email or password." }, body: loginForm(email) });
      }
      deps.logger.info("Signed in to settings", { user_id: who.userId, org_id: who.orgId });
      return signIn(who.userId, who.orgId);
    })
    .get("/setup/:token", async ({ params }) => {
      const setup = await people.peekSetup(params.token);
      if (!setup) return linkInvalid();
      if (setup.joinsAccount) return publicPage({ title: "Accept the invitation", body: acceptForm(params.token, setup.email, setup.orgName) });
      return publicPage({ title: "Set your password", body: setupForm(params.token, setup.email) });
    })
    .post("/setup/:token", async ({ params, request, body, server }) => {
      if (!sameOriginRequest(request, deps.address.baseUrl)) return csrfRefused();
      const setup = await people.peekSetup(params.token);
      if (!setup) return linkInvalid();
      const password = str(body, "password");
      const join = async () => {
        // The existing account's password is checked: throttled as a sign-in of that email from this address.
        const address = clientAddressGroup(request, server?.requestIP(request)?.address, deps.config.trustProxy);
        const pending = deps.rateLimiter.hit(loginChecks(setup.email, address));
        const verdict = pending instanceof Promise ? await pending : pending;
        if (!verdict.ok) return throttled(verdict.retryAfterSeconds, acceptForm(params.token, setup.email, setup.orgName));
        const done = await people.acceptInvitation(params.token, password);
        if (!done) {
          if (!(await people.peekSetup(params.token))) return linkInvalid();
          return publicPage({ title: "Accept the invitation", status: 401, flash: { kind: "error", message: "Wrong password." }, body: acceptForm(params.token, setup.email, setup.orgName) });
        }
        deps.logger.info("Invitation accepted with an existing account", { user_id: done.userId, org_id: done.orgId });
        return signIn(done.userId, done.orgId);
      };
      if (setup.joinsAccount) return join();
      const again = str(body, "confirm");
      const retry = (message: string) => publicPage({ title: "Set your password", status: 400, flash: { kind: "error", message }, body: setupForm(params.token, setup.email) });
      if (password !== again) return retry("The two passwords differ.");
      try {
        const done = await people.completeSetup(params.token, password);
        if (done === "join") return publicPage({ title: "Accept the invitation", status: 409, body: acceptForm(params.token, setup.email, setup.orgName) });
        if (!done) return linkInvalid();
        deps.logger.info("Password set from a setup link", { user_id: done.userId, org_id: done.orgId, proven: setup.delivered });
        return signIn(done.userId, done.orgId);
      } catch (err) {
        if (err instanceof InvalidInput) return retry(`Password ${err.fields.password ?? "is not valid"}.`);
        throw err;
      }
    })
    .use(
      // Sign-out is a signed-in POST like any other (CSRF-checked by the guard).
      new Elysia()
        .use(sessionGuard(deps))
        .post("/logout", async ({ request }) => {
          const token = readCookie(request, SESSION_COOKIE);
          if (token) await people.deleteSession(token);
          return redirect("/settings/login", { "set-cookie": clearSessionCookie(deps.address.baseUrl) });
        })
        // The organization switcher (a person in several organizations): the session now opens another membership. CSRF-checked by the guard; membership checked by the store.
        .post("/switch-organization", async ({ request, body, member }) => {
          const token = readCookie(request, SESSION_COOKIE) ?? "";
          const orgId = str(body, "org_id");
          if (!(await people.switchOrganization(token, orgId))) {
            deps.logger.warn("Organization switch refused", { user_id: member.userId, org_id: member.org.id });
            return forbiddenPage(member, "You are not a member of that organization.");
          }
          deps.logger.info("Organization switched in settings", { user_id: member.userId, from_org_id: member.org.id, org_id: orgId });
          return redirect("/settings");
        }),
    );
}
