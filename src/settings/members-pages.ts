import { Elysia } from "elysia";
import { InvalidInput } from "../errors.ts";
import type { PageDeps } from "./deps.ts";
import { type Html, html } from "./html.ts";
import { confirmed, confirmPage } from "./confirm-page.ts";
import { csrfField, emptyState, type Flash, redirect, renderPage, shownOnce, timeTag } from "./page.ts";
import { invitationMailer, mailFailure } from "../people/invitation-mail.ts";
import { INVITABLE_ROLES, setupUrl } from "../people/people-rules.ts";
import type { MemberRow } from "../people/types.ts";
import { peopleFor, requireAction, sessionGuard } from "./session-guard.ts";
import type { Member } from "./types.ts";

/**
 * Members (owner only): who may sign in to this organization's screen, with
 * which role; invitations are setup links, mailed to the address with
 * SMTP_URL, else shown once (the person sets the password of an account of
 * this organization only); the answer never depends on what the email has
 * elsewhere. Removing a member ends their sessions at once.
 */

const ROLE_HELP: Record<string, string> = {
  admin: "everything but API keys and members",
  developer: "webhooks, videos, live streams",
  viewer: "read only",
};

function memberRow(m: MemberRow): Html {
  return html`<tr>
  <td>${m.email}</td>
  <td><span class="badge">${m.role}</span></td>
  <td>${m.active ? "active" : html`<span class="muted">invited</span>`}</td>
  <td>${timeTag(m.createdAt)}</td>
  <td>${m.role === "owner" ? "" : html`<a class="button secondary" href="/settings/members/${m.userId}/remove">Remove</a>`}</td>
</tr>`;
}

function inviteForm(member: Member, email = "", role = "developer"): Html {
  return html`<section class="panel" aria-labelledby="invite">
  <h2 id="invite">Invite a member</h2>
  <form method="post" action="/settings/members">
    ${csrfField(member)}
    <label for="invite-email">Email</label>
    <input id="invite-email" name="email" type="email" required value="${email}">
    <label for="invite-role">Role</label>
    <select id="invite-role" name="role">${INVITABLE_ROLES.map((r) => html`<option value="${r}"${r === role ? html` selected` : ""}>${r} (${ROLE_HELP[r]})</option>`)}</select>
    <div><button type="submit">Invite member</button></div>
  </form>
</section>`;
}

export function membersPages(deps: PageDeps<"config" | "logger">) {
  const { people } = deps;

  async function listPage(member: Member, opts: { flash?: Flash; status?: number; top?: Html; email?: string; role?: string } = {}): Promise<Response> {
    const members = await people.listMembers(member.org.id);
    const table =
      members.length === 0
        ? emptyState("No members yet.")
        : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">State</th><th scope="col">Since</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${members.map(memberRow)}</tbody></table></div>`;
    return renderPage({ member, title: "Members", active: "members", flash: opts.flash, status: opts.status, body: html`${opts.top ?? ""}${table}${inviteForm(member, opts.email, opts.role)}` });
  }

  return new Elysia({ name: "settings-members" })
    .use(sessionGuard(deps))
    .onBeforeHandle(({ member }) => requireAction(member, "members.manage"))
    .get("/members", ({ member, query }) => listPage(member, { flash: query.done === "removed" ? { kind: "success", message: "Member removed; their sessions ended." } : undefined }))
    .post("/members", async ({ member, body }) => {
      const b = (body ?? {}) as Record<string, unknown>;
      const email = typeof b.email === "string" ? b.email : "";
      const role = typeof b.role === "string" ? b.role : "";
      try {
        const mailer = invitationMailer(deps.config, () => deps.address.baseUrl);
        const { token, userId } = await people.invite(member.org.id, email, role, { delivered: mailer !== null });
        const to = email.trim().toLowerCase();
        if (mailer) {
          // Mailed to the address itself: the link is never on this page, and using it proves the email.
          try {
            await mailer.send({ to, token, orgName: member.org.name, role });
          } catch (err) {
            await people.withdrawInvitation(member.org.id, userId);
            deps.logger.warn("Invitation mail not sent", { org_id: member.org.id, user_id: member.userId, error: mailFailure(err) });
            return listPage(member, { status: 502, email, role, flash: { kind: "error", message: `The invitation could not be mailed (${mailFailure(err)}); nothing was created. Try again later.` } });
          }
          deps.logger.info("Member invited from settings (mailed)", { org_id: member.org.id, user_id: member.userId, role });
          return listPage(member, {
            flash: { kind: "success", message: html`Invitation mailed to <strong>${to}</strong>. The link in it works once and expires in 72 hours.` },
          });
        }
        deps.logger.info("Member invited from settings", { org_id: member.org.id, user_id: member.userId, role });
        const link = setupUrl(deps.address.baseUrl, token);
        const top = shownOnce({
          id: "setup-link",
          heading: "Invitation link",
          text: html`Send this link to <strong>${to}</strong>. It works once and expires in 72 hours; it is not shown again. Whoever opens it chooses the password of ${to}'s account in ${member.org.name}, which signs in to this organization only.`,
          value: link,
          copyLabel: "Copy link",
        });
        return listPage(member, { top, flash: { kind: "success", message: "Invitation created." } });
      } catch (err) {
        if (!(err instanceof InvalidInput)) throw err;
        const why = Object.entries(err.fields)
          .map(([k, v]) => `${k === "email" ? "Email" : k === "role" ? "Role" : k} ${v}`)
          .join("; ");
        return listPage(member, { status: 400, email, role, flash: { kind: "error", message: `${why}.` } });
      }
    })
    .get("/members/:userId/remove", async ({ member, params }) => {
      const target = (await people.listMembers(member.org.id)).find((m) => m.userId === params.userId && m.role !== "owner");
      if (!target) return redirect("/settings/members");
      return confirmPage({
        member,
        title: "Remove member",
        active: "members",
        question: html`Remove <strong>${target.email}</strong> (${target.role}) from ${member.org.name}? They are signed out at once.`,
        action: `/settings/members/${target.userId}/remove`,
        button: "Yes, remove member",
        cancel: "/settings/members",
      });
    })
    .post("/members/:userId/remove", async ({ member, params, body }) => {
      if (!confirmed(body)) return redirect(`/settings/members/${encodeURIComponent(params.userId)}/remove`);
      if (await people.removeMember(member.org.id, params.userId)) deps.logger.info("Member removed from settings", { org_id: member.org.id, user_id: member.userId, removed_user_id: params.userId });
      return redirect("/settings/members?done=removed");
    });
}
