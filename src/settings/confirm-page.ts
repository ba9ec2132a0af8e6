import { type Html, html } from "./html.ts";
import { csrfField, renderPage, type Section } from "./page.ts";
import type { Member } from "./types.ts";

/**
 * The confirmation step of a destructive action (revoke a key, remove a
 * member): GET shows the question with a form that posts `confirm=yes` to the
 * same URL; the POST acts only when `confirmed(body)`, otherwise it sends the
 * person back to the question. A link or a prefetch never changes anything.
 */
export function confirmPage(o: { member: Member; title: string; active: Section; question: Html; action: string; button: string; cancel: string }): Response {
  return renderPage({
    member: o.member,
    title: o.title,
    active: o.active,
    body: html`<section class="panel">
  <p>${o.question}</p>
  <form method="post" action="${o.action}">
    ${csrfField(o.member)}
    <input type="hidden" name="confirm" value="yes">
    <button type="submit" class="danger">${o.button}</button>
    <a class="button secondary" href="${o.cancel}">Cancel</a>
  </form>
</section>`,
  });
}

/** True when the POST came from the confirmation form. */
export const confirmed = (body: unknown): boolean => (body as Record<string, unknown> | undefined)?.confirm === "yes";
