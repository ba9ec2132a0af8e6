import { Elysia } from "elysia";
import { createOutboundGuard, OutboundRefusedError } from "../net/outbound-guard.ts";
import { parseEndpointInput } from "../webhooks/endpoint-input.ts";
import { EndpointUrlRefused } from "../webhooks/errors.ts";
import { isEventName } from "../webhooks/event-names.ts";
import { sampleEventData } from "../webhooks/sample-events.ts";
import type { PageDeps } from "./deps.ts";
import { html } from "./html.ts";
import { copyButton, csrfField, emptyState, type Flash, redirect, renderPage } from "./page.ts";
import { type FormBody, formOf, listOf, plausibleId, type Problem, problemOf, textOf } from "./section-support.ts";
import { requireAction, sessionGuard } from "./session-guard.ts";
import { can, type Member } from "./types.ts";
import { createdEndpoint, type EndpointDraft, endpointDetail, endpointList } from "./webhooks-view.ts";
import { notFoundPage } from "./not-found-page.ts";

/** After a redirect, what happened (fixed texts: nothing from the query string is echoed). */
const DONE: Record<string, Flash> = {
  test: { kind: "success", message: "Test event sent. Its delivery is at the top of the log." },
  resent: { kind: "success", message: "Delivery re-sent; the new attempt is in its log." },
  deleted: { kind: "success", message: "Endpoint deleted; its pending deliveries were dropped." },
};

const LOG_SIZE = 50;

/**
 * Issue 13 point 4: webhook endpoints and their delivery logs. The same stores
 * and dispatcher as the REST routes (src/webhooks/webhook-routes.ts): input
 * through parseEndpointInput, the URL through the same outbound guard, the
 * test event through dispatcher.sendOne, a resend through dispatcher.resend.
 */
export function webhooksPages(deps: PageDeps<"webhooks" | "config" | "logger">) {
  const { endpoints, deliveries, dispatcher } = deps.webhooks;
  // The same rule as the service's one guard (service.ts): private addresses refused unless ALLOW_PRIVATE_NETWORK.
  const guard = createOutboundGuard({ allowPrivate: deps.config.allowPrivateNetwork });
  // As the API: wait for the first attempt a little longer than a delivery may take, then answer without it.
  const waitMs = deps.config.webhookTimeoutMs + 2000;
  const waitFor = <T>(p: Promise<T>) => Promise.race([p, Bun.sleep(waitMs).then(() => null)]);

  const listPage = async (member: Member, extra: { problem?: Problem | null; draft?: EndpointDraft; status?: number; flash?: Flash } = {}) => {
    const rows = await endpoints.list(member.org.id, { limit: 100 });
    return renderPage({
      member,
      title: "Webhooks",
      active: "webhooks",
      status: extra.status,
      flash: extra.flash,
      body: endpointList(rows, { canManage: canManage(member), csrf: csrfField(member), problem: extra.problem, draft: extra.draft, empty: emptyState }),
    });
  };

  return new Elysia({ name: "settings-webhooks" })
    .use(sessionGuard(deps))
    .get("/webhooks", ({ member, query }) => listPage(member, { flash: DONE[String(query.done ?? "")] }))
    .post("/webhooks", async ({ member, body }) => {
      const denied = requireAction(member, "webhooks.manage");
      if (denied) return denied;
      const form = formOf(body);
      const draft = draftOf(form);
      try {
        const input = parseEndpointInput(apiBodyOf(form));
        try {
          await guard.check(input.url);
        } catch (err) {
          if (err instanceof OutboundRefusedError) throw new EndpointUrlRefused();
          // A name that does not resolve right now is accepted, as by the API: deliveries check again.
        }
        const { row, signingSecret } = await endpoints.create(member.org.id, input);
        deps.logger.info("Webhook endpoint created from the settings screen", { org_id: member.org.id, endpoint_id: row.id, user_id: member.userId });
        return renderPage({ member, title: "Webhooks", active: "webhooks", status: 201, body: createdEndpoint(row, signingSecret, copyButton) });
      } catch (err) {
        const problem = problemOf(err);
        return listPage(member, { problem, draft, status: problem.status });
      }
    })
    .get("/webhooks/:id", async ({ member, params, query }) => {
      const row = plausibleId(params.id) ? await endpoints.get(member.org.id, params.id) : null;
      if (!row) return notFoundPage(member, "webhooks");
      const list = await deliveries.list(row.id, { limit: LOG_SIZE });
      const attempts = await deliveries.attemptsOf(list.map((d) => d.id));
      const log = list.map((d) => ({ delivery: d, attempts: attempts.get(d.id) ?? [] }));
      return renderPage({
        member,
        title: row.description || row.url,
        active: "webhooks",
        flash: DONE[String(query.done ?? "")],
        body: html`<p><a href="/settings/webhooks">← All endpoints</a></p>${endpointDetail(row, log, { canManage: canManage(member), csrf: csrfField(member), empty: emptyState })}`,
      });
    })
    .post("/webhooks/:id/test", async ({ member, params, body }) => {
      const denied = requireAction(member, "webhooks.manage");
      if (denied) return denied;
      const row = plausibleId(params.id) ? await endpoints.get(member.org.id, params.id) : null;
      if (!row) return notFoundPage(member, "webhooks");
      const event = formOf(body).event;
      const name = typeof event === "string" && isEventName(event) ? event : row.events.find(isEventName);
      if (!name) return notFoundPage(member, "webhooks");
      const samples = { baseUrl: deps.address.baseUrl, rtmpUrlBase: `rtmp://${deps.config.rtmpHost}:${deps.address.rtmpPort}/live` };
      const sent = await dispatcher.sendOne(row.id, name, sampleEventData(name, samples), { test: true });
      if (!sent) return notFoundPage(member, "webhooks");
      // The page shows the attempt's result: wait for it as the API does.
      await waitFor(sent.outcome);
      return redirect(`/settings/webhooks/${row.id}?done=test#${sent.row.id}`);
    })
    .post("/webhooks/:id/deliveries/:deliveryId/resend", async ({ member, params }) => {
      const denied = requireAction(member, "webhooks.manage");
      if (denied) return denied;
      const row = plausibleId(params.id) ? await endpoints.get(member.org.id, params.id) : null;
      const delivery = row && plausibleId(params.deliveryId) ? await deliveries.get(row.id, params.deliveryId) : null;
      if (!row || !delivery || delivery.status === "dropped") return notFoundPage(member, "webhooks");
      await waitFor(dispatcher.resend(delivery));
      return redirect(`/settings/webhooks/${row.id}?done=resent#${delivery.id}`);
    })
    .post("/webhooks/:id/delete", async ({ member, params }) => {
      const denied = requireAction(member, "webhooks.manage");
      if (denied) return denied;
      const removed = plausibleId(params.id) ? await endpoints.remove(member.org.id, params.id) : null;
      if (!removed) return notFoundPage(member, "webhooks");
      dispatcher.forgetEndpoint(params.id);
      deps.logger.info("Webhook endpoint deleted from the settings screen", { org_id: member.org.id, endpoint_id: params.id, user_id: member.userId });
      return redirect("/settings/webhooks?done=deleted");
    });
}

const canManage = (member: Member) => can(member.role, "webhooks.manage");

/** The form as the API's JSON body: events from the checkboxes, fields from a comma-separated list. */
function apiBodyOf(form: FormBody): Record<string, unknown> {
  const fields = textOf(form.fields);
  return {
    url: textOf(form.url) ?? "",
    events: listOf(form.events),
    fields: fields
      ? fields
          .split(/[,\s]+/)
          .map((f) => f.trim())
          .filter(Boolean)
      : null,
    description: textOf(form.description) ?? null,
  };
}

function draftOf(form: FormBody): EndpointDraft {
  return { url: textOf(form.url), events: listOf(form.events), fields: textOf(form.fields), description: textOf(form.description) };
}
