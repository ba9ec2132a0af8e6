import type { AttemptRow, DeliveryRow } from "../webhooks/delivery-store.ts";
import { MAX_DESCRIPTION } from "../webhooks/endpoint-input.ts";
import type { EndpointRow } from "../webhooks/endpoint-store.ts";
import { EVENT_NAMES } from "../webhooks/event-names.ts";
import { html, type Html } from "./html.ts";
import { badge, type Problem, problemBox, timeOf } from "./section-support.ts";

/** Pure renderers of the webhooks section (data → Html); webhooks-pages.ts wires them to routes. */

const base = "/settings/webhooks";

export interface EndpointDraft {
  url?: string;
  events?: string[];
  fields?: string;
  description?: string;
}

export function endpointList(rows: EndpointRow[], opts: { canManage: boolean; csrf: Html; problem?: Problem | null; draft?: EndpointDraft; empty: (text: string) => Html }): Html {
  const table = rows.length
    ? html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Description</th><th scope="col">Created</th></tr></thead>
        <tbody>${rows.map(
          (r) => html`<tr>
            <td><a href="${base}/${r.id}">${r.url}</a></td>
            <td>${r.events.length === EVENT_NAMES.length ? "All events" : r.events.join(", ")}</td>
            <td>${r.description ?? ""}</td>
            <td>${timeOf(r.createdAt)}</td>
          </tr>`,
        )}</tbody>
      </table></div>`
    : opts.empty("No webhook endpoints yet. Add one below to receive signed HTTPS POSTs when videos and live streams change.");
  return html`${table}${opts.canManage ? endpointForm(opts.csrf, opts.problem ?? null, opts.draft ?? {}) : html`<p class="muted">Your role can view endpoints but not change them.</p>`}`;
}

export function endpointForm(csrf: Html, problem: Problem | null, draft: EndpointDraft): Html {
  const chosen = new Set(draft.events ?? []);
  const fieldError = (name: string) => (problem?.fields[name] ? html`<p class="field-error" id="${name}-error">${problem.fields[name]}</p>` : "");
  const described = (name: string) => (problem?.fields[name] ? html` aria-describedby="${name}-error" aria-invalid="true"` : "");
  return html`<section class="panel" aria-labelledby="new-endpoint">
    <h2 id="new-endpoint">New endpoint</h2>
    ${problemBox(problem)}
    <form method="post" action="${base}">
      ${csrf}
      <p><label for="wh-url">URL</label>
        <input id="wh-url" name="url" type="url" required placeholder="https://example.com/hooks/video" value="${draft.url ?? ""}"${described("url")}>
        ${fieldError("url")}</p>
      <fieldset${described("events")}>
        <legend>Events</legend>
        ${EVENT_NAMES.map((e) => html`<label class="check"><input type="checkbox" name="events" value="${e}"${chosen.has(e) ? html` checked` : ""}> ${e}</label>`)}
        ${fieldError("events")}
      </fieldset>
      <p><label for="wh-fields">Fields (optional)</label>
        <input id="wh-fields" name="fields" type="text" placeholder="video.id, video.status" value="${draft.fields ?? ""}" aria-describedby="wh-fields-help"${described("fields")}>
        <span class="help" id="wh-fields-help">Dot-paths to keep in each payload's data, separated by commas. Empty: the whole payload.</span>
        ${fieldError("fields")}</p>
      <p><label for="wh-description">Description (optional)</label>
        <input id="wh-description" name="description" type="text" maxlength="${MAX_DESCRIPTION}" value="${draft.description ?? ""}"${described("description")}>
        ${fieldError("description")}</p>
      ${problem?.fields.endpoints ? html`<p class="field-error">${problem.fields.endpoints}</p>` : ""}
      <p><button type="submit">Create endpoint</button></p>
    </form>
  </section>`;
}

/** Shown once, right after creation: the signing secret is not stored in a form anyone can read back. */
export function createdEndpoint(row: EndpointRow, secret: string, copy: (text: string, label: string) => Html): Html {
  return html`<div class="notice" role="status">
      <h2>Endpoint created</h2>
      <p>Store the signing secret now: it is not shown again. Receivers verify <code>X-Service-Signature</code> with it.</p>
      <p><label for="signing-secret">Signing secret</label>
        <input id="signing-secret" type="text" readonly value="${secret}" class="secret">
        ${copy(secret, "Copy signing secret")}</p>
      <p><a href="${base}/${row.id}">Open ${row.url}</a> to send a test event.</p>
    </div>`;
}

function attemptRows(attempts: AttemptRow[]): Html {
  if (!attempts.length) return html`<p class="muted">No attempt yet.</p>`;
  return html`<div class="table-wrap"><table class="attempts">
    <thead><tr><th scope="col">Time</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Error</th></tr></thead>
    <tbody>${attempts.map(
      (a) => html`<tr class="attempt">
        <td>${timeOf(a.startedAt)}${a.manual ? html` <span class="muted">(manual)</span>` : ""}</td>
        <td class="attempt-status">${a.statusCode ?? "no answer"}</td>
        <td>${a.durationMs} ms</td>
        <td>${a.error ?? ""}</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}

export function endpointDetail(row: EndpointRow, deliveries: Array<{ delivery: DeliveryRow; attempts: AttemptRow[] }>, opts: { canManage: boolean; csrf: Html; empty: (text: string) => Html }): Html {
  const id = row.id;
  const testForm = opts.canManage
    ? html`<form method="post" action="${base}/${id}/test" class="test-event">
        ${opts.csrf}
        <div><label for="test-event">Event</label>
        <select id="test-event" name="event">${row.events.map((e) => html`<option value="${e}">${e}</option>`)}</select></div>
        <button type="submit">Send test event</button>
      </form>`
    : "";
  const log = deliveries.length
    ? html`<ol class="deliveries">${deliveries.map(
        ({ delivery: d, attempts }) => html`<li class="delivery" id="${d.id}" data-delivery-id="${d.id}">
          <h3><code>${d.event}</code> ${badge(d.status.toUpperCase())}${d.test ? html` <span class="badge">TEST</span>` : ""}</h3>
          <p class="muted">Delivery <code>${d.id}</code>, created ${timeOf(d.createdAt)}${d.status === "pending" ? html`, next attempt ${timeOf(d.nextAttemptAt)}` : ""}</p>
          ${attemptRows(attempts)}
          ${
            opts.canManage && d.status !== "dropped"
              ? html`<form method="post" action="${base}/${id}/deliveries/${d.id}/resend" class="inline">
                  ${opts.csrf}<button type="submit" aria-label="Resend ${d.event} delivery ${d.id}">Resend</button>
                </form>`
              : ""
          }
        </li>`,
      )}</ol>`
    : opts.empty("No deliveries yet. Send a test event to see one here.");
  return html`<dl class="facts">
      <dt>URL</dt><dd><code>${row.url}</code></dd>
      <dt>Events</dt><dd>${row.events.join(", ")}</dd>
      <dt>Fields</dt><dd>${row.fields.length ? row.fields.join(", ") : "the whole payload"}</dd>
      <dt>Description</dt><dd>${row.description ?? "—"}</dd>
      <dt>Created</dt><dd>${timeOf(row.createdAt)}</dd>
    </dl>
    ${testForm}
    <section class="panel" aria-labelledby="log">
      <h2 id="log">Delivery log</h2>
      <p class="muted">Newest first; deliveries are kept 30 days. Failed attempts are retried after about 1 min, 5 min, 25 min, 2 h, 10 h and 10 h.</p>
      ${log}
    </section>
    ${
      opts.canManage
        ? html`<form method="post" action="${base}/${id}/delete" data-confirm="Delete the endpoint ${row.url}? Deliveries waiting for a retry are dropped.">
            ${opts.csrf}<button type="submit" class="danger">Delete endpoint</button>
          </form>`
        : ""
    }`;
}
