import { Elysia } from "elysia";
import { DomainError, NotFound } from "../errors.ts";
import { parseRestrictionInput } from "../playback/restriction-input.ts";
import type { RestrictionRow } from "../playback/restrictions.ts";
import type { SigningKeyRow } from "../playback/signing-keys.ts";
import type { PageDeps } from "./deps.ts";
import { type Html, html } from "./html.ts";
import { confirmed, confirmPage } from "./confirm-page.ts";
import { csrfField, emptyState, type Flash, redirect, renderPage, shownOnce, timeTag } from "./page.ts";
import { requireAction, sessionGuard } from "./session-guard.ts";
import { can, type Member } from "./types.ts";

/**
 * Signed playback (issue 27): signing keys (a new key's private half shown
 * once, then only ids) and playback restrictions (referrer rules). Every role
 * looks; owners and admins create and delete (`organization.manage`). The
 * same stores as the API (src/playback).
 */

const ID = /^[A-Za-z0-9_]{1,64}$/;

/** A stale page deleting what is already gone lands on the list like a success. */
const ignoreNotFound = (err: unknown) => {
  if (!(err instanceof NotFound)) throw err;
};

function keyRow(member: Member, k: SigningKeyRow): Html {
  return html`<tr>
  <td><code>${k.id}</code></td>
  <td>${timeTag(k.createdAt)}</td>
  <td>${can(member.role, "organization.manage") ? html`<a class="button secondary" href="/settings/signing-keys/${k.id}/delete">Delete</a>` : ""}</td>
</tr>`;
}

function restrictionRow(member: Member, r: RestrictionRow): Html {
  return html`<tr>
  <td><code>${r.id}</code></td>
  <td>${r.referrer.allowed_domains.length ? r.referrer.allowed_domains.join(", ") : html`<span class="muted">none</span>`}</td>
  <td>${r.referrer.allow_no_referrer ? "yes" : "no"}</td>
  <td>${timeTag(r.createdAt)}</td>
  <td>${can(member.role, "organization.manage") ? html`<a class="button secondary" href="/settings/restrictions/${r.id}/delete">Delete</a>` : ""}</td>
</tr>`;
}

export function playbackPages(deps: PageDeps<"playback" | "logger">) {
  const { keys, restrictions } = deps.playback;

  async function keysPage(member: Member, opts: { flash?: Flash; status?: number; top?: Html } = {}): Promise<Response> {
    const rows = await keys.list(member.org.id);
    const table =
      rows.length === 0
        ? emptyState("No signing keys yet. Create one to sign playback tokens for videos and streams whose playback policy is signed.")
        : html`<div class="table-wrap"><table>
<caption class="muted">Private keys are never kept: a token's <code>kid</code> header names the key.</caption>
<thead><tr><th scope="col">Key id</th><th scope="col">Created</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${rows.map((k) => keyRow(member, k))}</tbody></table></div>`;
    const form = can(member.role, "organization.manage")
      ? html`<section class="panel" aria-labelledby="new-signing-key">
  <h2 id="new-signing-key">New signing key</h2>
  <form method="post" action="/settings/signing-keys">${csrfField(member)}<button type="submit">Create signing key</button></form>
  <p class="muted">An RSA 2048 key pair; at most 10 per organization. Policy of new videos and streams: <strong>${member.org.settings.playback.policy}</strong> (Organization, or <code>cli org set --playback-policy</code>).</p>
</section>`
      : "";
    return renderPage({ member, title: "Signing keys", active: "signing-keys", flash: opts.flash, status: opts.status, body: html`${opts.top ?? ""}${table}${form}` });
  }

  async function restrictionsPage(member: Member, opts: { flash?: Flash; status?: number; domains?: string } = {}): Promise<Response> {
    const rows = await restrictions.list(member.org.id);
    const table =
      rows.length === 0
        ? emptyState("No playback restrictions yet.")
        : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Restriction id</th><th scope="col">Allowed domains</th><th scope="col">No referrer</th><th scope="col">Created</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${rows.map((r) => restrictionRow(member, r))}</tbody></table></div>`;
    const form = can(member.role, "organization.manage")
      ? html`<section class="panel" aria-labelledby="new-restriction">
  <h2 id="new-restriction">New playback restriction</h2>
  <form method="post" action="/settings/restrictions">
    ${csrfField(member)}
    <label for="allowed-domains">Allowed domains</label>
    <input id="allowed-domains" name="allowed_domains" type="text" value="${opts.domains ?? ""}" placeholder="example.com, *.example.com" aria-describedby="allowed-domains-help">
    <p id="allowed-domains-help" class="muted">Comma-separated, at most 10: <code>example.com</code>, <code>*.example.com</code> (any subdomain) or <code>*</code>.</p>
    <label><input type="checkbox" name="allow_no_referrer" value="yes"> Allow requests without a Referer</label>
    <button type="submit">Create restriction</button>
  </form>
</section>`
      : "";
    return renderPage({ member, title: "Playback restrictions", active: "restrictions", flash: opts.flash, status: opts.status, body: html`${table}${form}` });
  }

  return new Elysia({ name: "settings-playback" })
    .use(sessionGuard(deps))
    .get("/signing-keys", ({ member, query }) =>
      keysPage(member, { flash: query.done === "deleted" ? { kind: "success", message: "Signing key deleted: tokens signed with it no longer play." } : undefined }),
    )
    .post("/signing-keys", async ({ member }) => {
      const refused = requireAction(member, "organization.manage");
      if (refused) return refused;
      try {
        const { row, privateKey } = await keys.create(member.org.id);
        deps.logger.info("Signing key created from settings", { org_id: member.org.id, user_id: member.userId, key_id: row.id });
        const shown = shownOnce({
          id: "new-signing-key-private",
          heading: `Private key of ${row.id}`,
          text: html`Copy it now: it is shown only once (PKCS#8 PEM, base64-encoded). Sign tokens with RS256 and <code>kid: ${row.id}</code>.`,
          value: privateKey,
          copyLabel: "Copy private key",
        });
        return keysPage(member, { top: shown, flash: { kind: "success", message: `Signing key ${row.id} created.` } });
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        return keysPage(member, { status: 422, flash: { kind: "error", message: Object.values((err.details ?? {}) as Record<string, string>).join(" ") || err.message } });
      }
    })
    .get("/signing-keys/:id/delete", ({ member, params }) => {
      const refused = requireAction(member, "organization.manage");
      if (refused) return refused;
      if (!ID.test(params.id)) return redirect("/settings/signing-keys");
      return confirmPage({
        member,
        title: "Delete signing key",
        active: "signing-keys",
        question: html`Delete <code>${params.id}</code>? Tokens signed with it stop playing at once. This cannot be undone.`,
        action: `/settings/signing-keys/${params.id}/delete`,
        button: "Yes, delete key",
        cancel: "/settings/signing-keys",
      });
    })
    .post("/signing-keys/:id/delete", async ({ member, params, body }) => {
      const refused = requireAction(member, "organization.manage");
      if (refused) return refused;
      if (!confirmed(body)) return redirect("/settings/signing-keys");
      await keys.remove(member.org.id, params.id).catch(ignoreNotFound);
      return redirect("/settings/signing-keys?done=deleted");
    })
    .get("/restrictions", ({ member, query }) => restrictionsPage(member, { flash: query.done === "deleted" ? { kind: "success", message: "Playback restriction deleted." } : undefined }))
    .post("/restrictions", async ({ member, body }) => {
      const refused = requireAction(member, "organization.manage");
      if (refused) return refused;
      const form = (body ?? {}) as Record<string, unknown>;
      const domains = typeof form.allowed_domains === "string" ? form.allowed_domains : "";
      try {
        const input = parseRestrictionInput({
          referrer: {
            allowed_domains: domains
              .split(",")
              .map((d) => d.trim())
              .filter(Boolean),
            allow_no_referrer: form.allow_no_referrer === "yes",
          },
        });
        const row = await restrictions.create(member.org.id, input.referrer);
        return restrictionsPage(member, { flash: { kind: "success", message: html`Playback restriction <code>${row.id}</code> created: pass it as <code>playback_restriction_id</code>.` } });
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        const message = Object.entries((err.details ?? {}) as Record<string, string>)
          .map(([k, v]) => `${k} ${v}`)
          .join("; ");
        return restrictionsPage(member, { status: 422, domains, flash: { kind: "error", message } });
      }
    })
    .get("/restrictions/:id/delete", ({ member, params }) => {
      const refused = requireAction(member, "organization.manage");
      if (refused) return refused;
      if (!ID.test(params.id)) return redirect("/settings/restrictions");
      return confirmPage({
        member,
        title: "Delete playback restriction",
        active: "restrictions",
        question: html`Delete <code>${params.id}</code>? Videos and streams created with it then refuse every media request.`,
        action: `/settings/restrictions/${params.id}/delete`,
        button: "Yes, delete restriction",
        cancel: "/settings/restrictions",
      });
    })
    .post("/restrictions/:id/delete", async ({ member, params, body }) => {
      const refused = requireAction(member, "organization.manage");
      if (refused) return refused;
      if (!confirmed(body)) return redirect("/settings/restrictions");
      await restrictions.remove(member.org.id, params.id).catch(ignoreNotFound);
      return redirect("/settings/restrictions?done=deleted");
    });
}
