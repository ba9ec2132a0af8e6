import { Elysia } from "elysia";
import { createStreamInput, scheduleStreamInput, view } from "../live/livestream-routes.ts";
import type { PageDeps } from "./deps.ts";
import { html } from "./html.ts";
import { type StreamDraft, createStreamForm, streamList, streamPage } from "./live-view.ts";
import { outputsPanel } from "./live-outputs-view.ts";
import { outputInput, prepareOutputs } from "../live/outputs/output-input.ts";
import { outputView } from "../live/outputs/output-store.ts";
import { notFoundPage } from "./not-found-page.ts";
import { copyButton, csrfField, emptyState, type Flash, redirect, renderPage } from "./page.ts";
import { checked, checkOrgLimit, definedOnly, type FormBody, formOf, plausibleId, type Problem, problemOf, textOf } from "./section-support.ts";
import { requireAction, sessionGuard } from "./session-guard.ts";
import { can, type Member } from "./types.ts";

const DONE: Record<string, Flash> = {
  ended: { kind: "success", message: "Stream ended. The recording appears below once it is made." },
  "output-added": { kind: "success", message: "Simulcast target added: it receives the broadcast while the stream is live." },
  "output-removed": { kind: "success", message: "Simulcast target removed." },
};

const LIST_SIZE = 50;

/**
 * Issue 13 point 6: live streams. The same service calls as the REST routes
 * (src/live/livestream-routes.ts): createStreamInput / scheduleStreamInput
 * validate, creation counts in the API's per-organization bucket, ending
 * goes through the ingest's endExplicitly as POST /livestreams/{id}/end/.
 */
export function livePages(deps: PageDeps<"live" | "videos" | "logger" | "rateLimiter">) {
  const { livestreams, ingest } = deps.live;
  const load = async (member: Member, id: string) => (plausibleId(id) ? await livestreams.get(member.org.id, id) : null);
  const outputs = deps.live.outputs;

  /** A stream's page, with its simulcast targets (and the add form's refusal, if any). */
  const streamPageOf = async (
    member: Member,
    record: NonNullable<Awaited<ReturnType<typeof load>>>,
    extra: { flash?: Flash; problem?: Problem; draft?: { url?: string; name?: string }; status?: number } = {},
  ) => {
    const s = view(record);
    const canManage = can(member.role, "livestreams.manage");
    const settled = record.tags.has("settled");
    const rows = (await outputs.store.ofStreams([record.id])).map((o) => outputView(o, settled));
    return renderPage({
      member,
      title: s.title,
      active: "live",
      flash: extra.flash,
      status: extra.status,
      body: streamPage(s, {
        canManage,
        csrf: csrfField(member),
        copy: copyButton,
        srtUrl: deps.live.srt.srtUrl(record.context.streamKey),
        outputs: outputsPanel(record.id, rows, { canManage, csrf: csrfField(member), settled, max: outputs.store.maxPerStream, problem: extra.problem, draft: extra.draft }),
      }),
    });
  };

  const listPage = async (member: Member, extra: { problem?: Problem | null; draft?: StreamDraft; flash?: Flash; status?: number } = {}) => {
    const items = (await livestreams.list(member.org.id, { limit: LIST_SIZE })).map(view);
    const form = can(member.role, "livestreams.manage")
      ? createStreamForm({
          csrf: csrfField(member),
          drm: member.org.settings.features.drm,
          subtitles: deps.videos.videos.transcriptEngine() !== null,
          problem: extra.problem,
          draft: extra.draft,
        })
      : html`<p class="muted">Your role can watch live streams but not create or end them.</p>`;
    return renderPage({ member, title: "Live streams", active: "live", flash: extra.flash, status: extra.status, body: html`${streamList(items, emptyState)}${form}` });
  };

  return (
    new Elysia({ name: "settings-live" })
      .use(sessionGuard(deps))
      .get("/live", ({ member }) => listPage(member))
      .post("/live", async ({ member, body }) => {
        const denied = requireAction(member, "livestreams.manage");
        if (denied) return denied;
        const form = formOf(body);
        try {
          await checkOrgLimit(deps, member, "/livestreams/");
          const fields = streamBodyOf(form);
          const input = fields.scheduled_at === undefined ? createStreamInput.parse(fields) : scheduleStreamInput.parse(fields);
          const record = await livestreams.create(member.org, input);
          deps.logger.info("Live stream created from the settings screen", { org_id: member.org.id, stream_id: record.id, user_id: member.userId });
          return redirect(`/settings/live/${record.id}`);
        } catch (err) {
          const problem = problemOf(err);
          const draft = { title: textOf(form.title), latency: textOf(form.latency), scheduled_at: textOf(form.scheduled_at) };
          return listPage(member, { problem, draft, status: problem.status });
        }
      })
      .get("/live/:id", async ({ member, params, query }) => {
        const record = await load(member, params.id);
        if (!record) return notFoundPage(member, "live");
        return streamPageOf(member, record, { flash: DONE[String(query.done ?? "")] });
      })
      // Issue 26: simulcast targets, through the same store and checks as POST/DELETE /livestreams/{id}/outputs/.
      .post("/live/:id/outputs", async ({ member, params, body }) => {
        const denied = requireAction(member, "livestreams.manage");
        if (denied) return denied;
        const record = await load(member, params.id);
        if (!record) return notFoundPage(member, "live");
        const form = formOf(body);
        try {
          const input = outputInput.parse(definedOnly({ url: textOf(form.url) ?? "", stream_key: textOf(form.stream_key), name: textOf(form.name) }));
          const [prepared] = await prepareOutputs([input], (host) => deps.live.outputs.checkHost(host));
          const [row] = await outputs.store.add(record.id, record.orgId, [prepared!]);
          outputs.runner.poke();
          deps.logger.info("Simulcast output added from the settings screen", { org_id: member.org.id, stream_id: record.id, output_id: row!.id, user_id: member.userId });
          return redirect(`/settings/live/${record.id}?done=output-added`);
        } catch (err) {
          const problem = problemOf(err);
          return streamPageOf(member, record, { problem, draft: { url: textOf(form.url), name: textOf(form.name) }, status: problem.status });
        }
      })
      .post("/live/:id/outputs/:output/delete", async ({ member, params }) => {
        const denied = requireAction(member, "livestreams.manage");
        if (denied) return denied;
        const record = await load(member, params.id);
        if (!record || !(await outputs.store.remove(record.id, params.output))) return notFoundPage(member, "live");
        outputs.runner.poke();
        deps.logger.info("Simulcast output removed from the settings screen", { org_id: member.org.id, stream_id: record.id, output_id: params.output, user_id: member.userId });
        return redirect(`/settings/live/${record.id}?done=output-removed`);
      })
      .get("/live/:id/status.json", async ({ member, params }) => {
        const record = await load(member, params.id);
        if (!record) return Response.json({ success: false, error: { code: "NOT_FOUND", message: "Resource not found." } }, { status: 404 });
        const s = view(record);
        return Response.json({ id: s.id, status: s.status, recording_id: s.recording?.asset_id ?? null }, { headers: { "cache-control": "no-store" } });
      })
      .post("/live/:id/end", async ({ member, params }) => {
        const denied = requireAction(member, "livestreams.manage");
        if (denied) return denied;
        const record = await load(member, params.id);
        if (!record) return notFoundPage(member, "live");
        if (!record.tags.has("settled")) await ingest.endExplicitly(record.context);
        deps.logger.info("Live stream ended from the settings screen", { org_id: member.org.id, stream_id: record.id, user_id: member.userId });
        return redirect(`/settings/live/${record.id}?done=ended`);
      })
  );
}

/** The form as the API's JSON body; a start time becomes ISO 8601 with the browser's offset (UTC without it). */
function streamBodyOf(form: FormBody): Record<string, unknown> {
  const start = textOf(form.scheduled_at);
  // Keys left out, not undefined: the strict input names any key it does not know (scheduled_at on the create route).
  return definedOnly({
    title: textOf(form.title) ?? "",
    latency: textOf(form.latency),
    subtitles: checked(form.subtitles) ? true : undefined,
    drm_enabled: checked(form.drm_enabled) ? true : undefined,
    scheduled_at: start === undefined ? undefined : withOffset(start, textOf(form.tz_offset)),
  });
}

/**
 * "2030-01-31T18:00" (datetime-local) + getTimezoneOffset() minutes (UTC −
 * local, so UTC+2 is -120) → "2030-01-31T18:00:00+02:00". Anything else is
 * passed through for the API's own check to refuse with its message.
 */
export function withOffset(local: string, offsetMinutes: string | undefined): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2})?$/.exec(local);
  if (!m) return local;
  const off = Number(offsetMinutes);
  const base = `${m[1]}${m[2] ?? ":00"}`;
  if (offsetMinutes === undefined || !Number.isInteger(off) || Math.abs(off) > 14 * 60) return `${base}Z`;
  const east = -off;
  const abs = Math.abs(east);
  return `${base}${east >= 0 ? "+" : "-"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}
