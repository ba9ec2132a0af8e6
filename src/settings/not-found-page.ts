import { html } from "./html.ts";
import { renderPage, type Section } from "./page.ts";
import type { Member } from "./types.ts";

const BACK: Partial<Record<Section, { href: string; label: string }>> = {
  webhooks: { href: "/settings/webhooks", label: "Webhooks" },
  videos: { href: "/settings/videos", label: "Videos" },
  live: { href: "/settings/live", label: "Live streams" },
};

/**
 * A missing thing and another organization's thing read the same (the API's
 * 404 NOT_FOUND rule): one page, one status, no hint which it was.
 */
export function notFoundPage(member: Member, section: Section): Response {
  const back = BACK[section];
  return renderPage({
    member,
    title: "Not found",
    active: section,
    status: 404,
    body: html`<p>Nothing here: it does not exist, or it was deleted.</p>${back ? html`<p><a href="${back.href}">Back to ${back.label}</a></p>` : ""}`,
  });
}
