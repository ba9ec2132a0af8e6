import { Elysia } from "elysia";
import { ApiKeyExists } from "../orgs/errors.ts";
import type { KeyInfo } from "../orgs/org-store.ts";
import type { PageDeps } from "./deps.ts";
import { type Html, html } from "./html.ts";
import { confirmed, confirmPage } from "./confirm-page.ts";
import { csrfField, emptyState, type Flash, redirect, renderPage, shownOnce, timeTag } from "./page.ts";
import { requireAction, sessionGuard } from "./session-guard.ts";
import type { Member } from "./types.ts";

/**
 * API keys (owner only, spec 2.2): the list never shows a secret, only the
 * prefix; a new key is shown once. The same records as `cli key …`
 * (src/orgs/org-store.ts): one live key per organization, so rotating is
 * revoke, then create.
 */

const MAX_NAME = 100;

const shownPrefix = (prefix: string) => `sk_live_${prefix}_…`;

function keyRow(k: KeyInfo): Html {
  return html`<tr>
  <td>${k.name}</td>
  <td><code>${shownPrefix(k.prefix)}</code></td>
  <td>${timeTag(k.createdAt)}</td>
  <td>${timeTag(k.lastUsedAt)}</td>
  <td><span class="badge ${k.status}">${k.status}</span></td>
  <td>${k.status === "live" ? html`<a class="button secondary" href="/settings/keys/${k.prefix}/revoke">Revoke</a>` : ""}</td>
</tr>`;
}

function createForm(member: Member, name = ""): Html {
  return html`<section class="panel" aria-labelledby="new-key">
  <h2 id="new-key">New API key</h2>
  <form method="post" action="/settings/keys">
    ${csrfField(member)}
    <label for="key-name">Name</label>
    <input id="key-name" name="name" type="text" required maxlength="${MAX_NAME}" value="${name}" placeholder="e.g. production web server" aria-describedby="key-name-help">
    <p id="key-name-help" class="muted">Describe where the key runs. The organization has one live key at a time.</p>
    <button type="submit">Create API key</button>
  </form>
</section>`;
}

export function keysPages(deps: PageDeps<"orgs" | "logger">) {
  async function listPage(member: Member, opts: { flash?: Flash; status?: number; top?: Html; name?: string } = {}): Promise<Response> {
    const keys = await deps.orgs.listKeys(member.org.id);
    const table =
      keys.length === 0
        ? emptyState("No API keys yet. Create one below to call the API.")
        : html`<div class="table-wrap"><table>
<caption class="muted">Secrets are never shown again after creation; a key is recognised by its prefix.</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${keys.map(keyRow)}</tbody></table></div>`;
    return renderPage({ member, title: "API keys", active: "keys", flash: opts.flash, status: opts.status, body: html`${opts.top ?? ""}${table}${createForm(member, opts.name)}` });
  }

  return new Elysia({ name: "settings-keys" })
    .use(sessionGuard(deps))
    .onBeforeHandle(({ member }) => requireAction(member, "keys.manage"))
    .get("/keys", ({ member, query }) => listPage(member, { flash: query.done === "revoked" ? { kind: "success", message: "Key revoked. Calls with it now fail with 401." } : undefined }))
    .post("/keys", async ({ member, body }) => {
      const raw = (body as Record<string, unknown> | undefined)?.name;
      const name = typeof raw === "string" ? raw.trim() : "";
      if (!name || name.length > MAX_NAME) {
        return listPage(member, { status: 400, name, flash: { kind: "error", message: `Name is required (at most ${MAX_NAME} characters).` } });
      }
      try {
        const { apiKey } = await deps.orgs.createKey(member.org.id, name);
        deps.logger.info("API key created from settings", { org_id: member.org.id, user_id: member.userId });
        const shown = shownOnce({
          id: "new-api-key",
          heading: "Your new API key",
          text: html`Copy it now: it is shown only once. Send it as <code>Authorization: Bearer …</code>.`,
          value: apiKey,
          copyLabel: "Copy key",
        });
        return listPage(member, { top: shown, flash: { kind: "success", message: `API key "${name}" created.` } });
      } catch (err) {
        if (!(err instanceof ApiKeyExists)) throw err;
        return listPage(member, {
          status: 409,
          name,
          flash: {
            kind: "error",
            message: html`<strong>API_KEY_EXISTS</strong>: the organization already has a live API key, and it can have only one. To rotate it, revoke the current key, then create a new one (calls with the old key fail with 401 from the moment it is revoked, so deploy the new key right after).`,
          },
        });
      }
    })
    .get("/keys/:prefix/revoke", async ({ member, params }) => {
      const key = (await deps.orgs.listKeys(member.org.id)).find((k) => k.prefix === params.prefix && k.status === "live");
      if (!key) return redirect("/settings/keys");
      return confirmPage({
        member,
        title: "Revoke API key",
        active: "keys",
        question: html`Revoke <strong>${key.name}</strong> (<code>${shownPrefix(key.prefix)}</code>)? Every API call with it will fail with 401 from now on. This cannot be undone.`,
        action: `/settings/keys/${key.prefix}/revoke`,
        button: "Yes, revoke key",
        cancel: "/settings/keys",
      });
    })
    .post("/keys/:prefix/revoke", async ({ member, params, body }) => {
      if (!confirmed(body)) return redirect(`/settings/keys/${encodeURIComponent(params.prefix)}/revoke`);
      // The organization's only live key, and only if it is still the one the page showed (a stale page must not revoke a newer key).
      const live = (await deps.orgs.listKeys(member.org.id)).find((k) => k.status === "live");
      if (live?.prefix === params.prefix) {
        await deps.orgs.revokeKey(member.org.id);
        deps.logger.info("API key revoked from settings", { org_id: member.org.id, user_id: member.userId, prefix: live.prefix });
      }
      return redirect("/settings/keys?done=revoked");
    });
}
