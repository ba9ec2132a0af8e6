import type { OutputView } from "../live/outputs/output-store.ts";
import { html, type Html } from "./html.ts";
import { badge, bytesOf, type Problem, problemBox, timeOf } from "./section-support.ts";

/**
 * A stream's simulcast targets on its page (issue 26): the list with each
 * status, a form to add one and a button to remove one (roles that manage
 * streams). The key field is a password input: it is never shown again.
 */
export function outputsPanel(
  streamId: string,
  outputs: OutputView[],
  opts: { canManage: boolean; csrf: Html; settled: boolean; max: number; problem?: Problem | null; draft?: { url?: string; name?: string } },
): Html {
  const d = opts.draft ?? {};
  const list = outputs.length
    ? html`<div class="table-wrap"><table id="outputs">
    <thead><tr><th scope="col">Name</th><th scope="col">Target</th><th scope="col">Status</th><th scope="col">Sent</th><th scope="col">Since</th><th scope="col">Last error</th>${opts.canManage ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : ""}</tr></thead>
    <tbody>${outputs.map(
      (o) => html`<tr data-output-id="${o.id}">
        <td>${o.name ?? html`<span class="muted">—</span>`}</td>
        <td><code>${o.url}</code></td>
        <td>${badge(o.status.toUpperCase())}</td>
        <td>${bytesOf(o.bytes_sent)}</td>
        <td>${timeOf(o.started_at)}</td>
        <td>${o.last_error ?? html`<span class="muted">—</span>`}</td>
        ${
          opts.canManage
            ? html`<td><form method="post" action="/settings/live/${streamId}/outputs/${o.id}/delete" data-confirm="Remove ${o.name ?? o.url}? Its connection stops.">
            ${opts.csrf}<button type="submit" class="danger" aria-label="Remove ${o.name ?? o.url}">Remove</button></form></td>`
            : ""
        }
      </tr>`,
    )}</tbody>
  </table></div>`
    : html`<p class="muted" id="no-outputs">No simulcast targets: the broadcast goes only to this server's viewers.</p>`;
  const form =
    opts.canManage && !opts.settled && outputs.length < opts.max
      ? html`<form method="post" action="/settings/live/${streamId}/outputs" id="output-form">
      ${opts.csrf}
      ${problemBox(opts.problem)}
      <label for="output-url">Target URL</label>
      <input id="output-url" name="url" type="text" required maxlength="2048" placeholder="rtmps://live.example.com/app" value="${d.url ?? ""}" aria-describedby="output-url-help">
      <span class="muted" id="output-url-help">rtmp://, rtmps:// or srt://host:port, from the platform's stream settings.</span>
      <label for="output-key">Stream key</label>
      <input id="output-key" name="stream_key" type="password" autocomplete="off" maxlength="1024">
      <label for="output-name">Name (optional)</label>
      <input id="output-name" name="name" type="text" maxlength="100" value="${d.name ?? ""}">
      <p><button type="submit">Add target</button></p>
    </form>`
      : opts.canManage && !opts.settled
        ? html`<p class="muted">At most ${opts.max} targets per stream.</p>`
        : "";
  return html`<section class="panel" aria-labelledby="outputs-heading">
    <h2 id="outputs-heading">Simulcast</h2>
    <p class="muted">While the stream is live, the broadcast is copied (no re-encoding) to each target; a lost target is retried.</p>
    ${list}${form}
  </section>`;
}
